/// The plan's JSON written by hand: an asset may list 200,000 files, and JSONEncoder spends most of `download
/// add` on them. The text is exactly what the `Codable` conformances read back (`DownloadResource` as one array).
extension DownloadPlan {
    /// The plan as JSON bytes, decodable with `JSONDecoder` as a `DownloadPlan`.
    package func encodedJSON() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(resources.count * 96 + manifests.reduce(0) { $0 + $1.text.utf8.count + $1.path.utf8.count + 32 } + 128)
        out += Array("{\"format\":".utf8)
        JSONText.string(format.rawValue, into: &out)
        out += Array(",\"mainPath\":".utf8)
        JSONText.string(mainPath, into: &out)
        out += Array(",\"totalDuration\":".utf8)
        JSONText.number(totalDuration, into: &out)
        out += Array(",\"manifests\":[".utf8)
        for (index, manifest) in manifests.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            out += Array("{\"path\":".utf8)
            JSONText.string(manifest.path, into: &out)
            out += Array(",\"text\":".utf8)
            JSONText.string(manifest.text, into: &out)
            out.append(UInt8(ascii: "}"))
        }
        out += Array("],\"resources\":[".utf8)
        for (index, resource) in resources.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            out.append(UInt8(ascii: "["))
            JSONText.string(resource.url, into: &out)
            out.append(UInt8(ascii: ","))
            JSONText.string(resource.localPath, into: &out)
            out.append(UInt8(ascii: ","))
            JSONText.string(resource.kind.rawValue, into: &out)
            out.append(UInt8(ascii: ","))
            JSONText.number(resource.duration, into: &out)
            out.append(UInt8(ascii: ","))
            JSONText.optionalString(resource.group, into: &out)
            out.append(UInt8(ascii: ","))
            JSONText.integer(resource.expectedSize == resource.range?.length ? nil : resource.expectedSize, into: &out)
            out.append(UInt8(ascii: ","))
            JSONText.integer(resource.range?.offset, into: &out)
            out.append(UInt8(ascii: ","))
            JSONText.integer(resource.range?.length, into: &out)
            out.append(UInt8(ascii: ","))
            if let types = resource.permittedMimeTypes {
                out.append(UInt8(ascii: "["))
                for (position, type) in types.enumerated() {
                    if position > 0 { out.append(UInt8(ascii: ",")) }
                    JSONText.string(type, into: &out)
                }
                out.append(UInt8(ascii: "]"))
            } else {
                out += Array("null".utf8)
            }
            out.append(UInt8(ascii: "]"))
        }
        out += Array("]}".utf8)
        return out
    }
}

/// JSON values written into a byte buffer.
enum JSONText {
    private static let hex = Array("0123456789abcdef".utf8)

    /// A JSON string: quotes, backslashes and control characters escaped.
    static func string(_ text: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case 0..<0x20: out += [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(byte >> 4)], hex[Int(byte & 15)]]
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    static func optionalString(_ text: String?, into out: inout [UInt8]) {
        if let text { string(text, into: &out) } else { out += Array("null".utf8) }
    }

    /// A finite number (anything else is null; plans only hold checked, finite values).
    static func number(_ value: Double?, into out: inout [UInt8]) {
        guard let value, value.isFinite else {
            out += Array("null".utf8)
            return
        }
        out += Array(String(describing: value).utf8)
    }

    static func integer(_ value: Int?, into out: inout [UInt8]) {
        if let value { out += Array(String(value).utf8) } else { out += Array("null".utf8) }
    }
}
