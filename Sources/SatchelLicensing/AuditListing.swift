import FluentKit
import Foundation
import SatchelBytes

/// The audit's listing: the issued licenses that pass a filter, newest first, a page at a time through the time index.
enum AuditListing {
    /// A page from the cursor (the time issued, then the record's ID for records of the same instant), never a count
    /// or a read of the rows before it. A time makes a round trip through `Date` and the database only to within a
    /// rounding (SQLite keeps seconds since 1970, `Date` seconds since 2001), so the page is read from just above the
    /// cursor's time and the rows at or before the cursor are dropped here, comparing the values as read.
    /// The newest `limit` issued licenses that pass `filter`, once `audit` has written what it holds.
    static func newest(_ filter: AuditFilter, limit: Int, of audit: AuditLog) async throws(LicensingError) -> [IssuedLicense] {
        do {
            try await audit.flush()
            return try await query(filter, on: audit.database).sort(\.$issuedAt, .descending).limit(max(limit, 0)).all().map(issued)
        } catch {
            throw .storage("cannot read the audit log")
        }
    }

    /// The newest 1,000 Sync SPC reports, once `audit` has written what it holds.
    static func syncReports(of audit: AuditLog) async throws(LicensingError) -> [(contentID: String, durationToExpiry: Int64, subject: String)] {
        do {
            try await audit.flush()
            return try await SyncModel.query(on: audit.database).sort(\.$receivedAt, .descending).limit(1000).all().map { ($0.contentID, $0.durationToExpiry, $0.subject) }
        } catch {
            throw .storage("cannot read sync reports")
        }
    }

    static func page(_ filter: AuditFilter, _ page: ListingRequest, on database: any Database) async throws(LicensingError) -> ListingPage<IssuedLicense> {
        var cursor: (time: Date, id: String)?
        if let key = page.afterKey {
            guard key.count == 2, let seconds = Double(key[0]), let id = UUID(uuidString: key[1]) else { throw .badRequest("the cursor (after) is not one of the audit's") }
            cursor = (Date(timeIntervalSinceReferenceDate: seconds), id.uuidString)
        }
        do {
            var margin = cursor == nil ? 0 : 16
            var rows: [LicenseModel]
            while true {
                let query = Self.query(filter, on: database)
                if let cursor { query.filter(\.$issuedAt <= cursor.time.addingTimeInterval(0.001)) }
                let read = try await query.sort(\.$issuedAt, .descending).sort(\.$id, .descending).limit(page.limit + 1 + margin).all()
                rows = cursor.map { cursor in read.filter { row in isAfter(row, cursor) } } ?? read
                // More records of the cursor's millisecond than the margin read: read again with a wider one.
                guard cursor != nil, read.count == page.limit + 1 + margin, rows.count <= page.limit else { break }
                margin *= 4
            }
            return ListingPage(reading: rows, limit: page.limit, listing: IssuedLicense.listing) {
                ["\($0.issuedAt.timeIntervalSinceReferenceDate)", $0.id?.uuidString ?? ""]
            }.map(issued)
        } catch {
            throw .storage("cannot read the audit log")
        }
    }

    /// True when `row` comes after `cursor` in the audit's order (newest first, then the record's ID, descending).
    static func isAfter(_ row: LicenseModel, _ cursor: (time: Date, id: String)) -> Bool {
        row.issuedAt < cursor.time || row.issuedAt == cursor.time && (row.id?.uuidString ?? "") < cursor.id
    }

    /// The audit's rows that pass `filter`.
    static func query(_ filter: AuditFilter, on database: any Database) -> QueryBuilder<LicenseModel> {
        let query = LicenseModel.query(on: database)
        if let asset = filter.assetID { query.filter(\.$assetID == asset) }
        if let subject = filter.subject { query.filter(\.$subject == subject) }
        if let type = filter.type { query.filter(\.$type == type) }
        if let since = filter.since { query.filter(\.$issuedAt >= since) }
        if let until = filter.until { query.filter(\.$issuedAt < until) }
        return query
    }

    /// A record as the audit gives it.
    static func issued(_ row: LicenseModel) -> IssuedLicense {
        IssuedLicense(assetID: row.assetID, keyID: row.keyID, subject: row.subject, type: row.type, issuedAt: row.issuedAt, customData: row.customData)
    }
}
