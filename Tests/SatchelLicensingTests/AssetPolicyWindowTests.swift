import Foundation
import SatchelLicensing
import SatchelRights
import Testing

/// The license server judges an asset's availability window by the rule the device keeps (``DateWindow``).
@Suite("Asset policy windows")
struct AssetPolicyWindowTests {
    let start = Date(timeIntervalSince1970: 1_900_000_000)
    var end: Date { start.addingTimeInterval(3600) }

    @Test("licensed from the start (inclusive) until the end (exclusive), as the device evaluates the same dates")
    func boundary() throws {
        let policy = AssetPolicy(notBefore: start, notAfter: end)
        #expect(throws: LicensingError.self) { try policy.checkWindow(at: start.addingTimeInterval(-1)) }
        try policy.checkWindow(at: start)
        try policy.checkWindow(at: end.addingTimeInterval(-0.001))
        #expect(throws: LicensingError.self) { try policy.checkWindow(at: end) }
        // The rights a device license carries end at the same moment.
        let rights = policy.rights(persistent: false)
        #expect(rights.evaluate(RightsUsage(acquired: start, firstUse: nil), at: end).status == .expired)
        #expect(rights.evaluate(RightsUsage(acquired: start, firstUse: nil), at: end.addingTimeInterval(-0.001)).status == .valid)
    }
}
