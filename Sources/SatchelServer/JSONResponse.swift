import Foundation
import SatchelBytes
import Hummingbird

extension Response {
    /// `value` as `application/json` (sorted keys), not to be cached: licenses and keys are per request.
    static func json(_ value: some Encodable, status: HTTPResponse.Status = .ok) throws -> Response {
        let data = try JSONCoding.encoder().encode(value)
        return Response(status: status, headers: [.contentType: "application/json", .cacheControl: "no-store"],
                        body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    /// Raw bytes with `contentType`, not to be cached.
    static func bytes(_ bytes: [UInt8], contentType: String) -> Response {
        Response(status: .ok, headers: [.contentType: contentType, .cacheControl: "no-store"], body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }
}
