import SatchelBytes

/// An MP4 edit list (`edts`/`elst`) as one number: where a track's media times sit on the presentation timeline.
/// Leading empty edits (`media_time` −1) delay the presentation by their duration (in the movie timescale); the
/// first media edit starts it at its `media_time`. Later edits (rare: cuts inside a track) are not honoured.
public enum EditList {
    /// The most entries read (a real file has one or two).
    static let entryLimit = 1000

    /// `presentation − media` in the media timescale, from `elst` (a box of `bytes`).
    public static func presentationOffset(_ elst: MP4Box, _ bytes: [UInt8], movieTimescale: UInt32, mediaTimescale: UInt32) throws(MediaError) -> Int64 {
        var (version, _, reader) = try elst.fullBoxReader(in: bytes)
        do {
            let count = Int(try reader.readUInt32())
            guard count <= entryLimit else { throw MediaError.malformed("'elst' with \(count) entries") }
            var empty: Int64 = 0
            for _ in 0..<count {
                let duration = version == 1 ? Int64(clamping: try reader.readUInt64()) : Int64(try reader.readUInt32())
                let mediaTime = version == 1 ? Int64(bitPattern: try reader.readUInt64()) : Int64(Int32(bitPattern: try reader.readUInt32()))
                try reader.skip(4)  // media_rate
                guard mediaTime < 0 else {
                    return converted(empty, from: movieTimescale, to: mediaTimescale).subtractingReportingOverflow(mediaTime).partialValue
                }
                empty = empty.addingReportingOverflow(duration).partialValue
            }
            return converted(empty, from: movieTimescale, to: mediaTimescale)
        } catch let error as MediaError {
            throw error
        } catch {
            throw .truncated("'elst'")
        }
    }

    /// The `elst` entries that say `offset` (media timescale): a media edit from `−offset`, after an empty edit of
    /// `offset` (converted to the movie timescale) when it is positive. Each entry: duration (0: to the end), media time.
    public static func entries(presentationOffset offset: Int64, movieTimescale: UInt32, mediaTimescale: UInt32) -> [(duration: UInt64, mediaTime: Int64)] {
        guard offset != 0 else { return [] }
        guard offset > 0 else { return [(0, -offset)] }
        return [(UInt64(converted(offset, from: mediaTimescale, to: movieTimescale)), -1), (0, 0)]
    }

    /// `value` ticks of `from` in ticks of `to`, rounded down (a product past 64 bits is divided first).
    public static func converted(_ value: Int64, from: UInt32, to: UInt32) -> Int64 {
        guard from != to else { return value }
        let (product, overflow) = value.multipliedReportingOverflow(by: Int64(to))
        guard !overflow else { return value / Int64(max(from, 1)) * Int64(to) }
        return product / Int64(max(from, 1))
    }
}
