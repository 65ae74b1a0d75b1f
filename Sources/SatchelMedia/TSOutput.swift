/// Where the muxer writes transport packets: a growing array, or memory the caller gives (the buffer an answer is
/// sent from), so that packets are written once, where they will be sent from.
public protocol TSOutput {
    /// Appends `bytes`.
    mutating func emit(_ bytes: UnsafeRawBufferPointer)
}

extension Array: TSOutput where Element == UInt8 {
    /// Appends `bytes` to the array.
    public mutating func emit(_ bytes: UnsafeRawBufferPointer) { append(contentsOf: bytes) }
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
        guard let base = bytes.baseAddress, let target = memory.baseAddress else { return }
        if bytes.count <= 16 {
            // A packet's header and adaptation field: a few bytes, cheaper stored one by one than through memmove.
            for index in 0..<bytes.count { target.storeBytes(of: base.load(fromByteOffset: index, as: UInt8.self), toByteOffset: count + index, as: UInt8.self) }
        } else {
            (target + count).copyMemory(from: base, byteCount: bytes.count)
        }
        count += bytes.count
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

    /// Appends the next `count` bytes (fewer when the bytes run out) to `out`.
    mutating func copy<Output: TSOutput>(_ count: Int, into out: inout Output) {
        var needed = count
        while needed > 0 {
            if index < 0 {
                let take = min(needed, header.count - offset), from = offset
                header.withUnsafeBytes { out.emit(UnsafeRawBufferPointer(rebasing: $0[from..<(from + take)])) }
                needed -= take
                offset += take
                if offset == header.count { (index, offset) = (0, 0) }
                continue
            }
            guard index < parts.count else { return }
            let take = min(needed, parts[index].count - offset), from = offset
            parts[index].withUnsafeBytes { out.emit(UnsafeRawBufferPointer(rebasing: $0[from..<(from + take)])) }
            needed -= take
            offset += take
            if offset == parts[index].count { (index, offset) = (index + 1, 0) }
        }
    }
}
