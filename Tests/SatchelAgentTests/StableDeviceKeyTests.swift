import Crypto
import Foundation
import SatchelAgent
import SatchelBytes
import Testing

/// Seed 003: "The DeviceID … will persist across app upgrades/installs". The server answers the same device ID for
/// the same key, so the key's keychain item is found by a stable name, not by the data directory's path (which a
/// reinstall changes). The lookup is checked here over items kept in memory; on Apple platforms the same lookup runs
/// over the keychain.
@Suite("The device key under a stable name: kept across a reinstall, an earlier version's item moved")
struct StableDeviceKeyTests {
    /// Items in memory, as the keychain keeps them.
    final class MemoryItems: SecretItems {
        let items = Locked<[String: Data]>([:])
        /// Items another process adds between this one's read and its add.
        let racing = Locked<[String: Data]>([:])

        func read(account: String) throws(AgentError) -> Data? { items.current[account] }

        func add(account: String, data: Data) throws(AgentError) -> Bool {
            items.withLock { items in
                if let other = racing.current[account] { items[account] = other }
                guard items[account] == nil else { return false }
                items[account] = data
                return true
            }
        }

        func delete(account: String) { _ = items.withLock { $0.removeValue(forKey: account) } }
    }

    @Test("a key made once is found again from another data directory (a reinstall), under the stable account only")
    func reinstall() throws {
        let items = MemoryItems()
        let first = try StableDeviceKey(items: items, account: "device-key", legacyAccount: "/var/mobile/Containers/Data/A/Library/satchel").deviceKey()
        let again = try StableDeviceKey(items: items, account: "device-key", legacyAccount: "/var/mobile/Containers/Data/B/Library/satchel").deviceKey()
        #expect(first.rawRepresentation == again.rawRepresentation)
        #expect(Array(items.items.current.keys) == ["device-key"], "nothing kept by path")
        let other = try StableDeviceKey(items: items, account: "second-agent", legacyAccount: nil).deviceKey()
        #expect(other.rawRepresentation != first.rawRepresentation, "another account, another key")
    }

    @Test("an upgrade keeps the key an earlier version kept under the data directory's path: moved to the stable account")
    func upgrade() throws {
        let items = MemoryItems()
        let earlier = P256.Signing.PrivateKey()
        let path = "/var/mobile/Containers/Data/A/Library/satchel"
        _ = try items.add(account: path, data: earlier.rawRepresentation)
        let key = try StableDeviceKey(items: items, account: "device-key", legacyAccount: path).deviceKey()
        #expect(key.rawRepresentation == earlier.rawRepresentation)
        #expect(items.items.current["device-key"] == earlier.rawRepresentation && items.items.current[path] == nil)
        let reinstalled = try StableDeviceKey(items: items, account: "device-key", legacyAccount: "/elsewhere").deviceKey()
        #expect(reinstalled.rawRepresentation == earlier.rawRepresentation)
    }

    @Test("two processes making the key at once end with one key; an item that is not a key is an error, never replaced")
    func raceAndDamage() throws {
        let items = MemoryItems()
        let theirs = P256.Signing.PrivateKey()
        items.racing.withLock { $0["device-key"] = theirs.rawRepresentation }
        let mine = try StableDeviceKey(items: items, account: "device-key", legacyAccount: nil).deviceKey()
        #expect(mine.rawRepresentation == theirs.rawRepresentation, "the other process's key is taken")

        let damaged = MemoryItems()
        _ = try damaged.add(account: "device-key", data: Data([1, 2, 3]))
        #expect(throws: AgentError.self) { try StableDeviceKey(items: damaged, account: "device-key", legacyAccount: nil).deviceKey() }
        #expect(damaged.items.current["device-key"] == Data([1, 2, 3]))
    }
}
