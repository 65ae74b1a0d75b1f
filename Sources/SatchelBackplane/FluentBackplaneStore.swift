import FluentKit
import Foundation
import SQLKit
import SatchelBytes
import SatchelStorage

/// The backplane's store on a FluentKit database. Each change to a user's devices or grants first takes the user's
/// row (`backplane_users`, created on first use): on PostgreSQL with `SELECT … FOR UPDATE`, so two nodes counting
/// the same user's devices or downloads wait for each other and the limits hold whatever the interleaving; on SQLite
/// the one writer does the same.
public struct FluentBackplaneStore: BackplaneStoring {
    let databaseHandle: any Database
    /// Where reads go (a sync, a listing): a SQLite store's readers, beside its one writer; nil: the database. And
    /// the devices' sync times, noted and written a moment later.
    let readers: ReaderPool?, syncWriter: SyncTimeWriter

    /// A store on `database`, migrated with ``BackplaneMigrations/all``, reading through `readers` when given (a
    /// SQLite store's); devices' sync times are written a moment after their syncs (``flush()`` before it closes) to
    /// ``SyncTimesTable`` in `syncTimes` (a SQLite store's own file for them, ``SyncTimesTable/file``), or in `database`.
    public init(database: any Database, readers: ReaderPool? = nil, syncTimes: (any Database)? = nil) {
        (databaseHandle, self.readers, syncWriter) = (database, readers, SyncTimeWriter(database: syncTimes ?? database))
    }

    /// Writes the devices' sync times noted and not yet written, now: before the database closes.
    public func flush() async throws(BackplaneError) {
        try await syncWriter.flush()
    }

    public func register(_ device: BackplaneDevice) async throws(BackplaneError) -> BackplaneRegistration {
        var registration = try await transaction("register the device") { database async throws in
            try await BackplaneRowLocks.user(device.user, on: database)
            if let external = device.externalID,
               try await BackplaneDeviceModel.query(on: database).filter(\.$externalID == external).filter(\.$id != device.deviceID).count() > 0 {
                throw BackplaneError.externalIDTaken
            }
            if let existing = try await BackplaneDeviceModel.find(device.deviceID, on: database) {
                guard existing.state == BackplaneDevice.State.active.rawValue else { throw BackplaneError.deviceKilled(device.deviceID) }
                guard existing.user == device.user else { throw BackplaneError.badRequest("the device is registered to another user") }
                if !device.name.isEmpty { existing.name = device.name }
                if !device.platform.isEmpty { existing.platform = device.platform }
                if device.externalID != nil { existing.externalID = device.externalID }
                try await existing.save(on: database)
                return BackplaneRegistration(device: existing.value, notice: .alreadyRegistered)  // its last sync: below
            }
            let limits = try await BackplaneLimitRows.effectiveLimits(of: device.user, on: database)
            let enabled = try await BackplaneQueries.count(BackplaneQueries.enabledDevices(user: device.user, except: ""), on: database)
            let enrollment = BackplaneRules.enrollment(enabledDevices: enabled, limits: limits)
            let model = BackplaneDeviceModel()
            model.id = device.deviceID
            model.user = device.user
            model.externalID = device.externalID
            model.name = device.name
            model.platform = device.platform
            model.downloadEnabled = enrollment.downloadEnabled
            model.state = BackplaneDevice.State.active.rawValue
            model.registered = device.registered
            model.nextSequence = 1
            try await model.create(on: database)
            return BackplaneRegistration(device: model.value, notice: enrollment.notice)
        }
        if registration.notice == .alreadyRegistered { registration.device = try await syncWriter.withSync(registration.device) }
        return registration
    }

    public func device(_ reference: DeviceReference) async throws(BackplaneError) -> BackplaneDevice {
        try await syncWriter.withSync(try await transaction("read the device") { database async throws in try await Self.model(reference, on: database).value })
    }

    public func devices(user: String?, page: ListingRequest) async throws(BackplaneError) -> ListingPage<BackplaneDevice> {
        var page = try await transaction("list the devices", atomic: false) { database async throws in
            try await BackplaneQueries.devices(user: user, page: page, on: database)
        }
        page.items = try await syncWriter.withSyncs(page.items)
        return page
    }

    public func delete(_ reference: DeviceReference) async throws(BackplaneError) -> BackplaneDevice {
        let device = try await syncWriter.withSync(try await transaction("forget the device") { database async throws in
            try await BackplaneRowLocks.user(try await Self.model(reference, on: database).user, on: database)
            return try await BackplaneQueries.delete(try await Self.model(reference, on: database), on: database)
        })
        await syncWriter.forget(device: device.deviceID)
        return device
    }

    public func setDownloadEnabled(_ reference: DeviceReference, _ wanted: Bool, at now: Date) async throws(BackplaneError) -> BackplaneDevice {
        try await syncWriter.withSync(try await transaction("change the device's downloading") { database async throws in
            let user = try await Self.model(reference, on: database).user
            try await BackplaneRowLocks.user(user, on: database)
            let model = try await Self.model(reference, on: database)  // read again under the lock
            let limits = try await BackplaneLimitRows.effectiveLimits(of: model.user, on: database)
            let others = try await BackplaneQueries.count(BackplaneQueries.enabledDevices(user: model.user, except: model.id ?? ""), on: database)
            let enabled = try BackplaneRules.downloadEnabled(wanted, device: model.value, otherEnabledDevices: others, limits: limits)
            if enabled != model.downloadEnabled {
                model.downloadEnabled = enabled
                try await Self.append(.downloadEnabled(enabled), to: model, at: now, on: database)
            }
            return model.value
        })
    }

    public func users(_ page: ListingRequest) async throws(BackplaneError) -> ListingPage<String> {
        try await transaction("list the users", atomic: false) { database async throws in try await BackplaneQueries.users(page, on: database) }
    }

    public func setLimits(_ limits: BackplaneLimits, user: String?) async throws(BackplaneError) {
        let limits = try limits.validated()
        try await transaction("set the limits") { database async throws in
            guard let user else {
                try await Self.putDocument(Self.limitsDocument, limits, on: database)
                return
            }
            try await BackplaneRowLocks.user(user, on: database)
            guard let model = try await BackplaneUserModel.find(user, on: database) else { throw BackplaneError.storage("the user row is missing") }
            model.maxDevices = limits.maxDevices
            model.maxAssetsPerDevice = limits.maxAssetsPerDevice
            model.maxDownloads = limits.maxDownloads
            model.maxStreams = limits.maxStreams
            try await model.save(on: database)
        }
    }

    public func limits(_ page: ListingRequest) async throws(BackplaneError) -> LimitsPage {
        try await transaction("read the limits", atomic: false) { database async throws in try await BackplaneLimitRows.limitsPage(page, on: database) }
    }

    public func limits(of user: String) async throws(BackplaneError) -> (global: BackplaneLimits, own: BackplaneLimits?) {
        try await transaction("read the user's limits", atomic: false) { database async throws in try await BackplaneLimitRows.limits(of: user, on: database) }
    }

    public func permission(device: String, asset: String, downloadable: Bool) async throws(BackplaneError) -> DownloadPermission {
        try await transaction("decide the permission") { database async throws in
            let user = try await Self.model(.device(device), on: database).user
            try await BackplaneRowLocks.user(user, on: database)
            let model = try await Self.model(.device(device), on: database)
            let already = try await BackplaneQueries.count(BackplaneQueries.grant(device: device, asset: asset), on: database) > 0
            let onDevice = try await BackplaneQueries.count(BackplaneQueries.grants(device: device), on: database)
            let account = try await BackplaneQueries.count(BackplaneQueries.grants(user: user), on: database)
            let answer = BackplaneRules.permission(device: model.value, alreadyGranted: already, downloadable: downloadable, assetsOnDevice: onDevice,
                                                   accountDownloads: account, limits: try await BackplaneLimitRows.effectiveLimits(of: user, on: database))
            if answer.isGranted, !already { try await BackplaneQueries.grant(asset, to: device, of: user, on: database) }
            return answer
        }
    }

    public func release(device: String, asset: String) async throws(BackplaneError) {
        try await transaction("give back the grant") { database async throws in
            let user = try await Self.model(.device(device), on: database).user
            try await BackplaneRowLocks.user(user, on: database)
            try await BackplaneGrantModel.query(on: database).filter(\.$device == device).filter(\.$asset == asset).delete()
        }
    }

    public func issue(_ action: BackplaneCommand.Action, to reference: DeviceReference, at now: Date) async throws(BackplaneError) -> BackplaneCommand {
        if case let .settings(settings) = action { _ = try settings.validated() }
        if case .downloadEnabled = action { throw .badRequest("downloading is turned on or off through its own request (the limit applies)") }
        return try await transaction("issue the command") { database async throws in
            let user = try await Self.model(reference, on: database).user
            try await BackplaneRowLocks.user(user, on: database)
            let model = try await Self.model(reference, on: database)
            guard model.state == BackplaneDevice.State.active.rawValue else { throw BackplaneError.deviceKilled(model.id ?? "") }
            let device = model.id ?? ""
            switch action {
            case let .deleteAsset(asset):
                try await BackplaneGrantModel.query(on: database).filter(\.$device == device).filter(\.$asset == asset).delete()
            case .wipe:
                try await BackplaneGrantModel.query(on: database).filter(\.$device == device).delete()
            case .kill:
                try await BackplaneGrantModel.query(on: database).filter(\.$device == device).delete()
                model.state = BackplaneDevice.State.killed.rawValue
                model.downloadEnabled = false
            case .downloadEnabled, .settings:
                break
            }
            return try await Self.append(action, to: model, at: now, on: database)
        }
    }

    public func pending(device: String, after: Int64, limit: Int) async throws(BackplaneError) -> [BackplaneCommand] {
        try await transaction("read the commands") { database async throws in
            let rows = try await BackplaneCommandModel.query(on: database).filter(\.$device == device).filter(\.$acknowledged == false)
                .filter(\.$sequence > after).sort(\.$sequence).limit(max(0, min(limit, 10_000))).all()
            return try rows.map { row throws in try JSONCoding.decoder().decode(BackplaneCommand.self, from: Data(row.body.utf8)) }
        }
    }

    public func acknowledgedThrough(device: String) async throws(BackplaneError) -> Int64 {
        try await transaction("read the acknowledgements") { database async throws in
            try await BackplaneQueries.acknowledgedThrough(device: device, on: database)
        }
    }

    public func acknowledge(device: String, command: String) async throws(BackplaneError) {
        try await transaction("acknowledge the command") { database async throws in
            guard let row = try await BackplaneCommandModel.find(command, on: database), row.device == device else {
                throw BackplaneError.unknownCommand(command)
            }
            guard !row.acknowledged else { return }
            row.acknowledged = true
            try await row.save(on: database)
        }
    }

    public func syncView(device: String, after: Int64, limit: Int, at now: Date) async throws(BackplaneError) -> BackplaneSyncAnswer {
        let answer = try await transaction("read the device's sync", atomic: false) { database async throws in
            try await BackplaneQueries.syncView(device: device, after: after, limit: limit, at: now, on: database)
        }
        if answer.state == .active { syncWriter.note(device: device, at: now) }
        return answer
    }

    public func synced(device: String, at now: Date) async throws(BackplaneError) {
        try await transaction("record the sync", atomic: false) { database async throws in
            _ = try await Self.model(.device(device), on: database)
        }
        try await syncWriter.record([(key: device, value: now)])
    }

    public func settings() async throws(BackplaneError) -> BackplaneSettings {
        try await transaction("read the settings") { database async throws in
            try await Self.document(Self.settingsDocument, as: BackplaneSettings.self, on: database) ?? BackplaneSettings()
        }
    }

    public func updateSettings(_ newer: BackplaneSettings) async throws(BackplaneError) -> BackplaneSettings {
        let newer = try newer.validated()
        return try await transaction("change the settings") { database async throws in
            try await BackplaneRowLocks.document(Self.settingsDocument, on: database)  // two changes at once: one after the other
            let current = try await Self.document(Self.settingsDocument, as: BackplaneSettings.self, on: database) ?? BackplaneSettings()
            let settings = current.updated(with: newer)
            try await Self.putDocument(Self.settingsDocument, settings, on: database)
            try await BackplaneRowLocks.notify("settings", on: database)
            return settings
        }
    }
}
