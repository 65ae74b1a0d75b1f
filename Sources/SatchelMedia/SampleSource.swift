/// Where a demuxed sample's bytes are: slices of the bytes demuxed (a whole file or fragment in memory), or
/// ranges of a file whose metadata boxes alone were read (``MP4Layout``).
struct SampleSource {
    /// The size of the file sample positions are in: every sample lies inside it.
    let fileSize: Int
    /// The file offset of the first byte of the bytes being demuxed.
    let base: Int
    /// Samples are slices of the bytes demuxed (the whole file, `base` 0); else they carry ``MediaSample/fileRange``.
    let inline: Bool

    /// Samples sliced from `bytes`, the whole file.
    static func inline(_ bytes: [UInt8]) -> SampleSource { SampleSource(fileSize: bytes.count, base: 0, inline: true) }

    /// Samples placed in a file of `fileSize` bytes, of which a box read alone starts at `base`.
    static func file(size fileSize: Int, boxAt base: Int) -> SampleSource { SampleSource(fileSize: fileSize, base: base, inline: false) }

    /// The sample of `size` bytes at file offset `offset`; nil when it does not lie inside the file.
    func sample(dts: Int64, ctsOffset: Int32, duration: UInt32, isSync: Bool, offset: Int, size: Int, in bytes: [UInt8]) -> MediaSample? {
        guard offset >= 0, size >= 0, size <= fileSize, offset <= fileSize - size else { return nil }
        if inline {
            return MediaSample(dts: dts, ctsOffset: ctsOffset, duration: duration, isSync: isSync, data: bytes[offset..<(offset + size)])
        }
        return MediaSample(dts: dts, ctsOffset: ctsOffset, duration: duration, isSync: isSync, data: [], fileRange: offset..<(offset + size))
    }
}
