import SatchelBytes
import SatchelMedia

/// 'pssh' boxes (ISO/IEC 23001-7 §8.1).
public enum PSSH {
    /// The W3C common system ID 1077efec-c0b2-4d02-ace3-3c1e52e2fb4b (Clear Key and key-ID-based systems).
    public static let commonSystemID: [UInt8] = [0x10, 0x77, 0xef, 0xec, 0xc0, 0xb2, 0x4d, 0x02, 0xac, 0xe3, 0x3c, 0x1e, 0x52, 0xe2, 0xfb, 0x4b]

    /// A pssh box for `systemID` with optional system data: version 1 lists `keyIDs` in the box, version 0 has no
    /// such list (the system's data names the keys).
    public static func box(systemID: [UInt8] = commonSystemID, keyIDs: [KeyID], data: [UInt8] = [], version: UInt8 = 1) -> [UInt8] {
        var w = MP4BoxWriter()
        w.fullBox("pssh", version: version) { w in
            w.bytes(systemID)
            if version >= 1 {
                w.u32(UInt32(keyIDs.count))
                for kid in keyIDs { w.bytes(kid.bytes) }
            }
            w.u32(UInt32(data.count))
            w.bytes(data)
        }
        return w.bytes
    }

    /// Reads a pssh box: system ID, key IDs (version 1) and data.
    public static func parse(_ bytes: [UInt8]) throws(ProtectionError) -> (systemID: [UInt8], keyIDs: [KeyID], data: [UInt8]) {
        guard let box = try? MP4Box.children(of: bytes, in: 0..<bytes.count).first, box.type == "pssh",
              let header = try? box.fullBoxReader(in: bytes) else { throw .malformed("not a pssh box") }
        let version = header.0
        var reader = header.2
        do {
            let system = try reader.readBytes(16)
            var kids: [KeyID] = []
            if version >= 1 {
                let count = Int(try reader.readUInt32())
                guard count <= reader.remaining / 16 else { throw ProtectionError.malformed("pssh key ID count") }
                for _ in 0..<count { kids.append(try KeyID(try reader.readBytes(16))) }
            }
            let data = try reader.readBytes(Int(try reader.readUInt32()))
            return (system, kids, data)
        } catch let error as ProtectionError {
            throw error
        } catch {
            throw .malformed("truncated pssh box")
        }
    }
}
