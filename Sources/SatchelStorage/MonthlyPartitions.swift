import FluentKit
import Foundation
import SQLKit

/// History tables on PostgreSQL as declarative range partitions by month of their time column (`<table>_p202611` holds
/// November 2026, in UTC), with a default partition for a time outside every month made (a device's clock far off).
/// The months ahead are made before they start (``ensure(_:monthsAhead:at:on:)``, hourly), and retention drops a month
/// whole once all of it is past (``drop(_:before:on:)``): a sweep then deletes only the partial month's rows in batches.
///
/// A partitioned table's primary key holds its time column, so a row's key is unique with its time: every writer of
/// these tables sends a row again with the same time (an audit record's time is its issue; an event's, the device's).
/// On SQLite nothing here applies: the tables stay plain and retention deletes in batches.
public enum MonthlyPartitions {
    /// A partitioned table: its name, key and time column.
    public struct Table: Sendable, Hashable {
        /// The table.
        public var name: String
        /// Its key (the primary key is the key and the time).
        public var key: String
        /// The column it is partitioned by.
        public var time: String

        /// A table partitioned by month of `time`.
        public init(name: String, key: String, time: String) {
            (self.name, self.key, self.time) = (name, key, time)
        }

        /// The default partition's name.
        var fallback: String { name + "_default" }
    }

    /// A month: its year and number (1–12), in UTC.
    public struct Month: Sendable, Hashable, Comparable {
        /// The year.
        public var year: Int
        /// The month, 1 to 12.
        public var month: Int

        /// The month `date` falls in.
        public init(of date: Date) {
            let parts = Self.calendar.dateComponents([.year, .month], from: date)
            (year, month) = (parts.year ?? 1970, parts.month ?? 1)
        }

        init(year: Int, month: Int) {
            (self.year, self.month) = (year, month)
        }

        /// The month `count` months after this one (before, when negative).
        public func adding(_ count: Int) -> Month {
            let index = year * 12 + (month - 1) + count
            return Month(year: index / 12, month: index % 12 + 1)
        }

        /// Its first instant.
        public var start: Date {
            Self.calendar.date(from: DateComponents(year: year, month: month, day: 1)) ?? Date(timeIntervalSince1970: 0)
        }

        /// The first instant after it.
        public var end: Date { adding(1).start }

        /// The name of `table`'s partition for this month.
        public func partition(of table: String) -> String {
            table + "_p" + String(year) + (month < 10 ? "0" : "") + String(month)
        }

        /// The month a partition of `table` named `name` holds, or nil for another name.
        static func parse(_ name: String, of table: String) -> Month? {
            let prefix = table + "_p"
            guard name.hasPrefix(prefix) else { return nil }
            let digits = name.dropFirst(prefix.count)
            guard digits.count == 6, digits.allSatisfy(\.isASCII), let number = Int(digits), (1...12).contains(number % 100) else { return nil }
            return Month(year: number / 100, month: number % 100)
        }

        /// A PostgreSQL literal of its first instant.
        var literal: String {
            String(year) + "-" + (month < 10 ? "0" : "") + String(month) + "-01 00:00:00+00"
        }

        public static func < (lhs: Month, rhs: Month) -> Bool {
            (lhs.year, lhs.month) < (rhs.year, rhs.month)
        }

        private static let calendar: Calendar = {
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
            return calendar
        }()
    }

    /// Months made ahead of the current one.
    public static let monthsAhead = 3
    /// Months before the current one a conversion makes for the rows already kept (older rows go to the default).
    static let monthsBack = 24

    /// Whether `sql` is PostgreSQL and `table` is partitioned there.
    public static func isPartitioned(_ table: Table, on sql: any SQLDatabase) async throws -> Bool {
        guard sql.dialect.name == "postgresql" else { return false }
        let kind = try await sql.raw("SELECT relkind::text AS kind FROM pg_class WHERE oid = to_regclass(\(bind: table.name))").first()?
            .decode(column: "kind", as: String.self)
        return kind == "p"
    }

    /// The months `table` has a partition for, oldest first.
    public static func months(_ table: Table, on sql: any SQLDatabase) async throws -> [Month] {
        try await sql.raw("""
            SELECT c.relname::text AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = to_regclass(\(bind: table.name))
            """).all().compactMap { Month.parse(try $0.decode(column: "name", as: String.self), of: table.name) }.sorted()
    }

    /// Turns the plain `table` into one partitioned by month (its rows, columns, defaults and indexes kept; the primary
    /// key becomes the key and the time), in one transaction of `database`. Nothing happens where it already is, or on SQLite.
    public static func convert(_ table: Table, at now: Date, on database: any Database) async throws {
        guard let sql = database as? any SQLDatabase, sql.dialect.name == "postgresql", !(try await isPartitioned(table, on: sql)) else { return }
        try await database.transaction { database in
            guard let sql = database as? any SQLDatabase else { return }
            // Another node converting at the same time: wait for it, then find the table converted.
            try await sql.raw("SELECT pg_advisory_xact_lock(hashtext(\(bind: table.name)))").run()
            guard !(try await isPartitioned(table, on: sql)) else { return }
            let old = table.name + "_unpartitioned"
            // The indexes other than the primary key, as statements naming the table (read before it is renamed).
            let indexes = try await sql.raw("""
                SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() AND tablename = \(bind: table.name)
                AND indexname NOT IN (SELECT conname FROM pg_constraint WHERE conrelid = to_regclass(\(bind: table.name)))
                """).all().map { try $0.decode(column: "indexdef", as: String.self) }
            let constraint = try await sql.raw("SELECT conname::text AS name FROM pg_constraint WHERE conrelid = to_regclass(\(bind: table.name)) AND contype = 'p'")
                .first()?.decode(column: "name", as: String.self)
            try await sql.raw("ALTER TABLE \(ident: table.name) RENAME TO \(ident: old)").run()
            if let constraint { try await sql.raw("ALTER TABLE \(ident: old) DROP CONSTRAINT \(ident: constraint)").run() }
            try await sql.raw("CREATE TABLE \(ident: table.name) (LIKE \(ident: old) INCLUDING DEFAULTS) PARTITION BY RANGE (\(ident: table.time))").run()
            try await sql.raw("ALTER TABLE \(ident: table.name) ADD PRIMARY KEY (\(ident: table.key), \(ident: table.time))").run()
            try await sql.raw("CREATE TABLE \(ident: table.fallback) PARTITION OF \(ident: table.name) DEFAULT").run()
            let current = Month(of: now)
            var earliest = current.adding(-monthsBack)
            if let oldest = try await sql.raw("SELECT MIN(\(ident: table.time)) AS t FROM \(ident: old)").first()?.decode(column: "t", as: Date?.self) {
                earliest = max(earliest, min(current, Month(of: oldest)))
            }
            var month = earliest
            while month <= current.adding(monthsAhead) {
                try await sql.raw("""
                    CREATE TABLE \(ident: month.partition(of: table.name)) PARTITION OF \(ident: table.name)
                    FOR VALUES FROM (\(literal: month.literal)) TO (\(literal: month.adding(1).literal))
                    """).run()
                month = month.adding(1)
            }
            try await sql.raw("INSERT INTO \(ident: table.name) SELECT * FROM \(ident: old)").run()
            try await sql.raw("DROP TABLE \(ident: old)").run()
            for index in indexes { try await sql.raw(SQLQueryString(index)).run() }
        }
    }

    /// Makes `table`'s partitions from the month of `now` to `monthsAhead` months after it, where missing; rows the
    /// default partition holds for such a month move into it. Several nodes doing this at once take turns.
    public static func ensure(_ table: Table, monthsAhead ahead: Int = monthsAhead, at now: Date, on sql: any SQLDatabase) async throws {
        guard try await isPartitioned(table, on: sql) else { return }
        let made = Set(try await months(table, on: sql))
        let current = Month(of: now)
        for month in (0...max(0, ahead)).map(current.adding) where !made.contains(month) {
            guard let database = sql as? any Database else { return }
            try await database.transaction { database in
                guard let sql = database as? any SQLDatabase else { return }
                try await sql.raw("SELECT pg_advisory_xact_lock(hashtext(\(bind: table.name)))").run()
                guard try await sql.raw("SELECT to_regclass(\(bind: month.partition(of: table.name))) IS NULL AS missing").first()?
                    .decode(column: "missing", as: Bool.self) == true else { return }
                let name = month.partition(of: table.name)
                let range = SQLQueryString("\(ident: table.time) >= \(literal: month.literal) AND \(ident: table.time) < \(literal: month.adding(1).literal)")
                try await sql.raw("CREATE TABLE \(ident: name) (LIKE \(ident: table.name) INCLUDING DEFAULTS)").run()
                try await sql.raw("INSERT INTO \(ident: name) SELECT * FROM \(ident: table.fallback) WHERE \(range)").run()
                try await sql.raw("DELETE FROM \(ident: table.fallback) WHERE \(range)").run()
                try await sql.raw("""
                    ALTER TABLE \(ident: table.name) ATTACH PARTITION \(ident: name)
                    FOR VALUES FROM (\(literal: month.literal)) TO (\(literal: month.adding(1).literal))
                    """).run()
            }
        }
    }

    /// Drops `table`'s partitions whose whole month is before `cutoff`; answers the rows they held.
    @discardableResult
    public static func drop(_ table: Table, before cutoff: Date, on sql: any SQLDatabase) async throws -> Int {
        guard try await isPartitioned(table, on: sql) else { return 0 }
        var dropped = 0
        for month in try await months(table, on: sql) where month.end <= cutoff {
            let name = month.partition(of: table.name)
            dropped += try await sql.raw("SELECT COUNT(*) AS n FROM \(ident: name)").first()?.decode(column: "n", as: Int.self) ?? 0
            try await sql.raw("DROP TABLE \(ident: name)").run()
        }
        return dropped
    }
}

/// The migration that partitions history tables by month on PostgreSQL (``MonthlyPartitions/convert(_:at:on:)``); on
/// SQLite it does nothing.
public struct PartitionByMonth: AsyncMigration {
    /// The migration's name in the log.
    public let name: String
    /// The tables it partitions.
    public let tables: [MonthlyPartitions.Table]

    /// A migration logged under `name` that partitions `tables`.
    public init(name: String, tables: [MonthlyPartitions.Table]) {
        (self.name, self.tables) = (name, tables)
    }

    public func prepare(on database: any Database) async throws {
        for table in tables { try await MonthlyPartitions.convert(table, at: Date(), on: database) }
    }

    public func revert(on database: any Database) async throws {}
}
