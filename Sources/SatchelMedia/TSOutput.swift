/// Where the muxer writes transport packets: a growing array, or memory the caller gives (the buffer an answer is
/// sent from), so that packets are written once, where they will be sent from.
package protocol TSOutput {
    /// Appends `bytes`.
    mutating func emit(_ bytes: UnsafeRawBufferPointer)
    /// Appends one transport packet that `write` fills: it is given the packet's 188 bytes and writes every one.
    mutating func packet(_ write: (UnsafeMutableRawBufferPointer) -> Void)
}

extension TSOutput {
    /// The packet made on the stack, then appended.
    package mutating func packet(_ write: (UnsafeMutableRawBufferPointer) -> Void) {
        withUnsafeTemporaryAllocation(byteCount: TSMuxer.packetSize, alignment: 16) { packet in
            write(packet)
            emit(UnsafeRawBufferPointer(packet))
        }
    }
}

extension Array: TSOutput where Element == UInt8 {
    /// Appends `bytes` to the array, as typed bytes.
    public mutating func emit(_ bytes: UnsafeRawBufferPointer) {
        bytes.withMemoryRebound(to: UInt8.self) { append(contentsOf: $0) }
    }
}

/// Packets written into memory the caller owns. A write that would run past its end is not made: it marks the
/// output as overflowed (the caller gave less than it was told to give), and nothing after it is written.
public struct TSBufferOutput: TSOutput {
    private let memory: UnsafeMutableRawBufferPointer
    /// Bytes written from the start of the memory.
    public private(set) var count = 0
    /// Whether a write did not fit.
    public private(set) var overflowed = false

    /// An output into `memory`, from its start.
    public init(_ memory: UnsafeMutableRawBufferPointer) {
        self.memory = memory
    }

    /// Copies `bytes` after what is written, when they fit.
    public mutating func emit(_ bytes: UnsafeRawBufferPointer) {
        guard !overflowed, bytes.count <= memory.count - count else {
            overflowed = true
            return
        }
        if let base = bytes.baseAddress, let target = memory.baseAddress { (target + count).copyMemory(from: base, byteCount: bytes.count) }
        count += bytes.count
    }

    /// The packet written straight into the memory, when it fits.
    public mutating func packet(_ write: (UnsafeMutableRawBufferPointer) -> Void) {
        guard !overflowed, TSMuxer.packetSize <= memory.count - count else {
            overflowed = true
            return
        }
        write(UnsafeMutableRawBufferPointer(rebasing: memory[count..<(count + TSMuxer.packetSize)]))
        count += TSMuxer.packetSize
    }
}

/// Walks a PES packet's bytes — its header, then the payload parts — appending them to the output a transport
/// packet's worth at a time, straight from where they lie.
struct PayloadCursor {
    let header: [UInt8]
    let parts: [ArraySlice<UInt8>]
    /// The part being read; -1 while in the header.
    private var index = -1
    /// The next byte's offset in it.
    private var offset = 0

    init(header: [UInt8], parts: [ArraySlice<UInt8>]) {
        self.header = header
        self.parts = parts
    }

    /// Copies the next `target.count` bytes (fewer when the bytes run out) to `target`; answers how many it copied.
    @discardableResult
    mutating func copy(into target: UnsafeMutableRawBufferPointer) -> Int {
        guard let destination = target.baseAddress else { return 0 }
        var done = 0
        while done < target.count {
            if index < 0 {
                let take = min(target.count - done, header.count - offset), from = offset
                header.withUnsafeBytes { if let source = $0.baseAddress { (destination + done).copyMemory(from: source + from, byteCount: take) } }
                done += take
                offset += take
                if offset == header.count { (index, offset) = (0, 0) }
                continue
            }
            guard index < parts.count else { return done }
            let take = min(target.count - done, parts[index].count - offset), from = offset
            parts[index].withUnsafeBytes { if let source = $0.baseAddress { (destination + done).copyMemory(from: source + from, byteCount: take) } }
            done += take
            offset += take
            if offset == parts[index].count { (index, offset) = (index + 1, 0) }
        }
        return done
    }
}
