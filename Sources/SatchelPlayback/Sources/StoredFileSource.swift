import SatchelHTTP

/// A file served as stored: from disk (a range, or all of it, sent with `sendfile` where the connection can), else
/// passed on from the origin as it arrives (kept in the store once whole, when the asset is being downloaded); a
/// byte range of a file not on disk is cut from the whole file.
struct StoredFileSource: SegmentSource {
    let path: String

    func answer(_ request: SourceRequest) async throws(PlaybackError) -> SegmentAnswer {
        let (files, path) = (request.files, path)
        let contentType = ContentTypes.type(of: path)
        if let local = try files.local(path) {
            let head = try SegmentHead(contentType, size: local.size, rangeHeader: request.range)
            return SegmentAnswer(head) { head.body(.none) { FileRangeBody(file: local, range: $0) } }
        }
        if let remote = files.asset.origin[path] {
            let known = remote.range == nil ? remote.expectedSize : nil
            let head = try known.map { (size) throws(PlaybackError) in try SegmentHead(contentType, size: size, rangeHeader: request.range) }
            if request.range == nil || head != nil && head?.range == nil { return try await streamFromOrigin(remote, files, contentType: contentType) }
            if let head, let range = head.range {
                // A byte range of a file of known size (a single file played online): only those bytes, from the origin.
                return SegmentAnswer(head) { () async throws(PlaybackError) -> any SegmentBody in
                    let bytes = try await files.reportingOrigin(path) { () async throws(PlaybackError) -> [UInt8] in
                        try await files.context.origin.fetch(OriginFile(url: remote.url, range: range), headers: files.asset.originHeaders,
                                                             limit: SessionFiles.maximumFile)
                    }
                    guard Int64(bytes.count) == range.upperBound - range.lowerBound + 1 else {
                        throw .originUnreachable("the origin sent \(bytes.count) bytes of a range of \(range.upperBound - range.lowerBound + 1)")
                    }
                    return MemoryBody(bytes, transform: .none)
                }
            }
        }
        return try SegmentAnswer.made(try await files.whole(path), contentType, rangeHeader: request.range)
    }

    /// The file from the origin, sent as it arrives (chunked when the origin gives no length: nothing is held whole
    /// in memory), and kept in the store once whole, when the asset is being downloaded.
    private func streamFromOrigin(_ remote: OriginFile, _ files: SessionFiles, contentType: String) async throws(PlaybackError) -> SegmentAnswer {
        let answer = try await files.reportingOrigin(path) { () async throws(PlaybackError) -> OriginFetcher.Answer in
            try await files.context.origin.open(remote, headers: files.asset.originHeaders)
        }
        let limit = SessionFiles.maximumFile
        let media = contentType.hasPrefix("video/") || contentType.hasPrefix("audio/")
        if let length = answer.length, length > limit { throw .invalidContent("\(path) is larger than \(limit >> 20) MB") }
        if let length = answer.length, let expected = remote.expectedSize, expected != length {
            throw .originUnreachable("the origin announced \(length) bytes for \(path), where \(expected) were expected")
        }
        // Kept in the store only when its size is known beforehand (announced, or planned) and all of it arrives.
        var keep: (@Sendable ([UInt8]) async -> Void)?
        let expected = answer.length ?? remote.expectedSize
        if files.asset.fill != nil, let expected {
            let path = path
            keep = { bytes in if Int64(bytes.count) == expected { await files.keep(path, bytes) } }
        }
        let (events, assetID, path, url) = (files.context.events, files.session.assetID, path, PlaybackEvent.withoutQuery(remote.url))
        var feed = OriginFeed(body: answer.body, length: answer.length, limit: limit, slowest: files.context.configuration.originPace, keep: keep,
                              failed: { reason in events.report(.serverError(asset: assetID, path: path, status: nil, reason: reason, url: url)) })
        feed.media = media
        feed.invalid = { reason in events.report(.invalidContent(asset: assetID, path: path, reason: reason)) }
        let body: any SegmentBody = answer.length == 0 ? MemoryBody.empty(.none) : feed
        return SegmentAnswer(SegmentHead(contentType, size: answer.length)) { body }
    }
}
