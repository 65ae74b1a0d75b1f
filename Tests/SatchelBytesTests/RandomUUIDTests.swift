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
}
