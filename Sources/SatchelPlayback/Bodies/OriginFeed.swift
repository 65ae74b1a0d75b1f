import AsyncHTTPClient
import Hummingbird
import NIOCore
import SatchelHTTP
import SatchelStreams

/// A file on its way from the origin to the player: each buffer is sent on as it arrives; once the whole file has
/// come (exactly the announced length, when one was announced), `keep` may store it. A failure of the origin
/// mid-file — an error, more than announced or than `limit`, a trickle below the pace — is reported and ends the
/// answer short (the player asks again). Nothing is held beyond what `keep` needs.
struct OriginFeed: SegmentBody {
    /// What a media file's HTML page in its place is reported as.
    static let webPage = "the origin sent an HTML page instead of media (a Wi-Fi hotspot's sign-in page?): check the network connection"

    let body: HTTPClientResponse.Body
    /// The announced length (nil: none; the answer is sent chunked).
    let length: Int64?
    /// The most bytes taken from the origin for one file.
    let limit: Int64
    /// The slowest the origin may send it.
    let slowest: OriginPace
    let keep: (@Sendable ([UInt8]) async -> Void)?
    let failed: @Sendable (String) async -> Void
    /// The file is media: an HTML page in its place (a Wi-Fi hotspot's sign-in page) is refused, reported through
    /// `invalid`, and never sent on.
    var media = false
    var invalid: @Sendable (String) async -> Void = { _ in }
    var transform: SegmentTransform { .none }

    func write(to writer: inout any ResponseBodyWriter, on channel: (any Channel)?) async throws {
        var kept: [UInt8] = []
        if keep != nil, let length { kept.reserveCapacity(Int(length)) }
        var received: Int64 = 0
        var pace = slowest.pace(for: length, limit: limit)
        var buffers = body.makeAsyncIterator()
        while true {
            let next: ByteBuffer?
            let asked = ContinuousClock.now
            do { next = try await buffers.next() } catch {
                await failed(OriginFetcher.reason(error))
                throw PlaybackError.originUnreachable(OriginFetcher.reason(error))
            }
            RequestTiming.current?.add(.origin, ContinuousClock.now - asked, bytes: next?.readableBytes ?? 0)
            guard let buffer = next else { break }
            if media, received == 0, MIMEType.looksLikeWebPage(buffer.readableBytesView) {
                await invalid(OriginFeed.webPage)
                throw PlaybackError.invalidContent(OriginFeed.webPage)
            }
            received += Int64(buffer.readableBytes)
            if let reason = pace.count(buffer.readableBytes) {
                await failed("the origin is too slow: \(reason)")
                throw PlaybackError.originUnreachable("the origin is too slow")
            }
            guard received <= (length ?? limit) else {
                await failed("the origin sent more than \(length.map { "the \($0) bytes it announced" } ?? "\(limit >> 20) MB")")
                throw PlaybackError.originUnreachable("the origin sent more than it may")
            }
            if keep != nil { kept += buffer.readableBytesView }
            try await writer.write(buffer)
        }
        if let length, received != length {
            await failed("the origin sent \(received) of \(length) bytes")
            throw PlaybackError.originUnreachable("the origin cut the file short")
        }
        await keep?(kept)
    }
}
