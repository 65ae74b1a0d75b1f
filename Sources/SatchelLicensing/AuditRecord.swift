import Foundation
import SatchelBytes

/// One audit record (an issued license or a sync report) and its form in the audit journal: a 4-byte length,
/// the fields, and a 64-bit FNV-1a checksum of them, so that a record cut short by a crash or damaged on disk is
/// recognised and never read as another.
enum AuditRecord: Sendable, Equatable {
    case license(AuditLog.LicenseEntry)
    case sync(AuditLog.SyncEntry)

    /// The largest record read back (a record is a few hundred bytes; custom data is capped well below this).
    static let maximumLength = 1 << 20

    /// The record's row ID in the database: written with the record, so that a record folded twice (a crash
    /// between the database's commit and the journal's truncation) is one row.
    var id: UUID {
        switch self {
        case let .license(entry): entry.id
        case let .sync(entry): entry.id
        }
    }

    /// The journal form: length, fields, checksum.
    var encoded: [UInt8] {
        var fields = ByteWriter(capacity: 256)
        switch self {
        case let .license(entry):
            fields.writeUInt8(1)
            Self.write(entry.id, entry.issuedAt, to: &fields)
            for text in [entry.assetID, entry.keyID, entry.subject, entry.type] { Self.write(text, to: &fields) }
            fields.writeUInt8(entry.customData == nil ? 0 : 1)
            if let customData = entry.customData { Self.write(customData, to: &fields) }
        case let .sync(entry):
            fields.writeUInt8(2)
            Self.write(entry.id, entry.receivedAt, to: &fields)
            Self.write(entry.contentID, to: &fields)
            Self.write(entry.subject, to: &fields)
            fields.writeUInt64(UInt64(bitPattern: entry.durationToExpiry))
        }
        var body: [UInt8] = []
        fields.finish(into: &body)
        var record = ByteWriter(capacity: body.count + 12)
        record.writeUInt32(UInt32(truncatingIfNeeded: body.count))
        record.writeBytes(body)
        record.writeUInt64(Self.checksum(body[...]))
        var bytes: [UInt8] = []
        record.finish(into: &bytes)
        return bytes
    }

    /// Reads the records of a journal, in order, and the length of the part that holds whole, intact records:
    /// reading stops at the first record that is cut short, too long, fails its checksum or does not parse.
    static func decodeAll(_ bytes: [UInt8]) -> (records: [AuditRecord], intact: Int) {
        var reader = ByteReader(bytes)
        var records: [AuditRecord] = []
        var intact = 0
        while !reader.isAtEnd {
            guard let length = try? reader.readUInt32(), Int(length) <= maximumLength, reader.remaining >= Int(length) + 8,
                  let body = try? reader.readSlice(Int(length)), let stored = try? reader.readUInt64(), stored == checksum(body),
                  let record = decode(Array(body)) else { break }
            records.append(record)
            intact = bytes.count - reader.remaining
        }
        return (records, intact)
    }

    /// One record's fields; nil when they do not parse.
    private static func decode(_ body: [UInt8]) -> AuditRecord? {
        var reader = ByteReader(body)
        do {
            let kind = try reader.readUInt8()
            let id = try readID(&reader)
            let date = Date(timeIntervalSince1970: Double(bitPattern: try reader.readUInt64()))
            switch kind {
            case 1:
                let (asset, key, subject, type) = (try readText(&reader), try readText(&reader), try readText(&reader), try readText(&reader))
                let customData = try reader.readUInt8() == 1 ? try readText(&reader) : nil
                return .license(AuditLog.LicenseEntry(id: id, assetID: asset, keyID: key, subject: subject, type: type, customData: customData,
                                                      issuedAt: date))
            case 2:
                let (content, subject) = (try readText(&reader), try readText(&reader))
                let duration = Int64(bitPattern: try reader.readUInt64())
                return .sync(AuditLog.SyncEntry(id: id, contentID: content, durationToExpiry: duration, subject: subject, receivedAt: date))
            default:
                return nil
            }
        } catch {
            return nil
        }
    }

    private static func write(_ id: UUID, _ date: Date, to writer: inout ByteWriter) {
        withUnsafeBytes(of: id.uuid) { writer.writeBytes($0) }
        writer.writeUInt64(date.timeIntervalSince1970.bitPattern)
    }

    private static func write(_ text: String, to writer: inout ByteWriter) {
        writer.writeUInt32(UInt32(truncatingIfNeeded: text.utf8.count))
        writer.writeBytes(text.utf8)
    }

    private static func readID(_ reader: inout ByteReader) throws(ByteReaderError) -> UUID {
        let b = try reader.readBytes(16)
        return UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
    }

    private static func readText(_ reader: inout ByteReader) throws(ByteReaderError) -> String {
        let count = try reader.readUInt32()
        return String(decoding: try reader.readSlice(Int(count)), as: UTF8.self)
    }

    /// FNV-1a, 64 bits: finds a torn or damaged record (the journal is the server's own file, mode 0600; this is
    /// not a defence against its owner).
    static func checksum(_ bytes: ArraySlice<UInt8>) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return hash
    }
}
