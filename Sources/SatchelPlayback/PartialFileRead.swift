import SatchelSystem

// Seed 000 §5.5 (download and play offline): play while it downloads, and offline what is there.

/// A read of a single file that is downloading: the bytes its download already holds come from disk (the complete file, or its `.part`), the rest from the
/// origin with a byte range; origin bytes that continue the part are handed to the asset's
/// ``PlayableAsset/extendPart`` to be kept. The file and its part are looked up at every read: both grow while it plays.
struct PartialFileRead: Sendable {
    let asset: PlayableAsset
    let file: String
    let remote: OriginFile
    let origin: OriginFetcher

    func read(_ offset: Int64, _ count: Int) async throws(PlaybackError) -> [UInt8] {
        guard count > 0 else { return [] }
        let end = offset + Int64(count)  // exclusive
        if let whole = try asset.openLocal(file) { return try SessionFiles.read(whole, range: offset...(end - 1)) }
        var bytes: [UInt8] = []
        var from = offset
        let part = try asset.openLocal(file + ".part")
        if let part, offset < part.size {
            bytes = try SessionFiles.read(part, range: offset...(min(end, part.size) - 1))
            from = offset + Int64(bytes.count)
            if from == end { return bytes }
        }
        let answer = try await origin.open(OriginFile(url: remote.url, range: from...(end - 1)), headers: asset.originHeaders)
        let fetched = try await origin.collect(answer, limit: SessionFiles.maximumFile)
        if let part, from == part.size, let keep = asset.extendPart {
            await keep(file, from, fetched, answer.total)
        }
        return bytes + fetched
    }
}
