import Hummingbird
import NIOCore
import SatchelBytes
import SatchelHTTP
import SatchelProtection
import SatchelStreams
import SatchelSystem

/// A CMAF `cbcs` or `cenc` fragment made clear with its init segment's `tenc`: from disk streamed fragment by
/// fragment (the clear length known from the box headers and `moof`s alone, samples decrypted in the buffer read);
/// from the origin, or for a byte range, made clear whole.
struct CMAFSource: SegmentSource {
    let path: String
    let protection: SegmentProtection

    func answer(_ request: SourceRequest) async throws(PlaybackError) -> SegmentAnswer {
        let (files, path) = (request.files, path)
        let contentType = ContentTypes.type(of: path)
        guard let decryptor = try await files.fmp4Decryptor(protection) else {
            return try await UndecryptableSource(path: path, reason: "\(path) has no init segment to decrypt it with").answer(request)
        }
        let key = try files.reportingInvalid(path, marksWell: false) { () throws(PlaybackError) -> SecretBytes in try SessionFiles.key(files.session.keys, of: decryptor) }
        if request.range == nil, let local = try files.local(path) {
            let plan = try files.reportingInvalid(path) { () throws(PlaybackError) -> FMP4ClearPlan in
                do {
                    return try FMP4ClearPlan(size: local.size, decryptor: decryptor) { (offset, count) throws(ProtectionError) -> [UInt8] in
                        do { return try local.read(count, at: offset) } catch { throw .malformed("the segment cannot be read: \(error)") }
                    }
                } catch { throw .invalidContent("\(local.name) does not decrypt: \(error)") }
            }
            return SegmentAnswer(SegmentHead(contentType, size: plan.size)) { () throws(PlaybackError) -> any SegmentBody in
                try files.reportingInvalid(path) { () throws(PlaybackError) -> any SegmentBody in
                    let cipher: CommonEncryption
                    do { cipher = try decryptor.cipher(key) } catch { throw .invalidContent("\(local.name) does not decrypt: \(error)") }
                    for case let .made(bytes) in plan.parts { try ClearOutput.check(bytes, of: local.name) }
                    guard plan.size > 0 else { return MemoryBody.empty(.commonEncryption) }
                    return FMP4ClearBody(file: local, plan: plan, decryptor: decryptor, cipher: cipher)
                }
            }
        }
        let bytes = try await files.whole(path)
        let clear = try files.reportingInvalid(path) { () throws(PlaybackError) -> [UInt8] in
            do { return try RequestTiming.timed(.decryption) { () throws(ProtectionError) -> [UInt8] in try decryptor.clearSegment(bytes, key: key) } } catch { throw .invalidContent("\(path) does not decrypt: \(error)") }
        }
        try ClearOutput.check(clear, of: path)
        return try SegmentAnswer.made(clear, contentType, rangeHeader: request.range, transform: .commonEncryption)
    }
}

/// The clear form of a stored CMAF `cenc` / `cbcs` segment, fragment by fragment as `plan` gives it: the boxes it
/// made, stored stretches as they are, samples decrypted in the buffer they were read into.
struct FMP4ClearBody: SegmentBody {
    let file: ConfinedFile
    let plan: FMP4ClearPlan
    let decryptor: FMP4Decryptor
    let cipher: CommonEncryption
    var transform: SegmentTransform { .commonEncryption }

    func write(to writer: inout any ResponseBodyWriter, on channel: (any Channel)?) async throws {
        let path = file.name
        for part in plan.parts {
            switch part {
            case let .made(bytes):
                try await writer.write(ByteBuffer(bytes: bytes))
            case let .stored(range):
                var offset = range.lowerBound
                while offset < range.upperBound {
                    let buffer = try file.segment(Int(min(range.upperBound - offset, Int64(Clearing.chunk))), at: offset)
                    try await writer.write(buffer)
                    offset += Int64(buffer.readableBytes)
                }
            case let .decrypted(range, samples):
                // Read straight into the buffer sent and decrypted there.
                var buffer = try file.segment(Int(range.upperBound - range.lowerBound), at: range.lowerBound)
                try Clearing.decrypt(&buffer, of: path) { (bytes) throws(ProtectionError) in
                    try decryptor.decrypt(samples, in: bytes, at: range.lowerBound, cipher: cipher)
                }
                try await writer.write(buffer)
            }
        }
    }
}

/// A protected CMAF init segment without `sinf` and `pssh`, its `encv` / `enca` sample entries `avc1` / `mp4a` again.
struct ClearedInitSource: SegmentSource {
    let path: String

    func answer(_ request: SourceRequest) async throws(PlaybackError) -> SegmentAnswer {
        let (files, path) = (request.files, path)
        let bytes = try await files.whole(path)
        let clear = try files.reportingInvalid(path) { () throws(PlaybackError) -> [UInt8] in
            do { return try FMP4Decryptor.clearInitSegment(bytes) } catch { throw .invalidContent("\(path): \(error)") }
        }
        try ClearOutput.check(clear, of: path)
        return try SegmentAnswer.made(clear, ContentTypes.type(of: path), rangeHeader: request.range, transform: .commonEncryption)
    }
}
