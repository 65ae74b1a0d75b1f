import Foundation
import SatchelBytes

/// The one JSON form of rights, claims and the secure clock — dates as seconds since 1970, keys sorted — used
/// in tokens and wherever server or device stores them.
public enum RightsJSON {
    /// Encodes `value`; nil when it cannot be encoded.
    public static func text(_ value: some Encodable) -> String? {
        (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Decodes `text`; nil when it is not `type` in this form.
    public static func value<T: Decodable>(_ type: T.Type, from text: String) -> T? {
        try? decoder.decode(type, from: Data(text.utf8))
    }

    static var encoder: JSONEncoder { JSONCoding.encoder(dates: .unixSeconds) }

    static var decoder: JSONDecoder { JSONCoding.decoder(dates: .unixSeconds) }
}
