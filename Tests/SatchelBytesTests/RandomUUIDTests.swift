import Foundation
import Testing
import SatchelBytes

/// Random UUIDs from Satchel's own random source (Foundation's opens `/dev/urandom` for each one on Linux).
@Suite("Random UUIDs")
struct RandomUUIDTests {
    @Test("version 4 with the RFC's variant, in the text form Foundation reads back, and 10,000 all different")
    func shape() {
        var seen = Set<UUID>()
        for _ in 0..<10_000 {
            let uuid = SecureRandom.uuid()
            let text = uuid.uuidString
            #expect(Array(text)[14] == "4")
            #expect("89AB".contains(Array(text)[19]))
            #expect(UUID(uuidString: text) == uuid)
            seen.insert(uuid)
        }
        #expect(seen.count == 10_000)
    }

    @Test("version 7: the time in milliseconds first, so that later UUIDs sort after earlier ones (as text too); the RFC's variant")
    func timeOrdered() {
        let start = Date(timeIntervalSince1970: 1_900_000_000.123)
        let first = SecureRandom.uuidV7(at: start)
        #expect(first.uuidString.hasPrefix(String(format: "%08X-%04X", 1_900_000_000_123 >> 16, 1_900_000_000_123 & 0xFFFF)))
        #expect(Array(first.uuidString)[14] == "7" && "89AB".contains(Array(first.uuidString)[19]))
        var previous = first.uuidString
        for step in 1...1_000 {
            let next = SecureRandom.uuidV7(at: start.addingTimeInterval(Double(step) * 0.002)).uuidString  // 2 ms apart: whole milliseconds differ
            #expect(next > previous)
            previous = next
        }
        #expect(SecureRandom.uuidV7(at: start) != first)
    }
}
