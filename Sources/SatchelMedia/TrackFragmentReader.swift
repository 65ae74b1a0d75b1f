import SatchelBytes

/// Reads the samples of one 'traf' of a fragmented MP4.
struct TrackFragmentReader {
    var trackID: UInt32 = 0
    var samples: [MediaSample] = []

    /// Reads `traf` of `moof` in `bytes`; `source` places the samples (default: slices of `bytes`, the whole file).
    init(traf: MP4Box, moof: MP4Box, bytes: [UInt8], defaults: MP4Demuxer.TrackDefaults, nextDTS: Int64,
         source: SampleSource? = nil) throws(MediaError) {
        let source = source ?? .inline(bytes)
        let children = try traf.children(in: bytes)
        do {
            var (_, flags, tfhd) = try children.required("tfhd", in: "traf").fullBoxReader(in: bytes)
            trackID = try tfhd.readUInt32()
            var base = source.base + moof.offset  // a file offset; an explicit base-data-offset is one too
            if flags & 0x01 != 0 { base = Int(clamping: try tfhd.readUInt64()) }
            if flags & 0x02 != 0 { _ = try tfhd.readUInt32() }
            let defaultDuration = flags & 0x08 != 0 ? try tfhd.readUInt32() : defaults.duration
            let defaultSize = flags & 0x10 != 0 ? try tfhd.readUInt32() : defaults.size
            let defaultFlags = flags & 0x20 != 0 ? try tfhd.readUInt32() : defaults.flags
            var dts = nextDTS
            if let tfdt = children.first("tfdt") {
                var (version, _, reader) = try tfdt.fullBoxReader(in: bytes)
                dts = version == 1 ? Int64(clamping: try reader.readUInt64()) : Int64(try reader.readUInt32())
            }
            var dataOffset = base
            for trun in children.all("trun") {
                var (_, runFlags, reader) = try trun.fullBoxReader(in: bytes)
                let count = Int(try reader.readUInt32())
                if runFlags & 0x01 != 0 {
                    let (offset, overflow) = base.addingReportingOverflow(Int(Int32(bitPattern: try reader.readUInt32())))
                    guard !overflow else { throw MediaError.malformed("'trun' data offset overflows") }
                    dataOffset = offset
                }
                let firstFlags = runFlags & 0x04 != 0 ? try reader.readUInt32() : nil
                let perSample = [0x100, 0x200, 0x400, 0x800].filter { runFlags & UInt32($0) != 0 }.count * 4
                guard count <= reader.remaining / max(perSample, 1) || perSample == 0 && count <= 1_000_000 else {
                    throw MediaError.truncated("'trun' with \(count) samples")
                }
                for index in 0..<count {
                    let duration = runFlags & 0x100 != 0 ? try reader.readUInt32() : defaultDuration
                    let size = Int(runFlags & 0x200 != 0 ? try reader.readUInt32() : defaultSize)
                    var sampleFlags = runFlags & 0x400 != 0 ? try reader.readUInt32() : defaultFlags
                    if index == 0, let firstFlags { sampleFlags = firstFlags }
                    let cts = runFlags & 0x800 != 0 ? Int32(bitPattern: try reader.readUInt32()) : 0
                    let sync = (sampleFlags >> 16) & 1 == 0
                    guard let sample = source.sample(dts: dts, ctsOffset: cts, duration: duration, isSync: sync, offset: dataOffset, size: size,
                                                     in: bytes) else {
                        throw MediaError.truncated("fragment sample of \(size) bytes at offset \(dataOffset) lies past the end of the file")
                    }
                    samples.append(sample)
                    let (next, overflow) = dts.addingReportingOverflow(Int64(duration))
                    guard !overflow else { throw MediaError.malformed("fragment decode times overflow") }
                    dts = next
                    dataOffset += size  // at most the file's size, checked above
                }
            }
        } catch let error as MediaError {
            throw error
        } catch {
            throw .truncated("track fragment: \(error)")
        }
    }
}
