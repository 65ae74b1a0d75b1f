import SatchelBytes
import SatchelMedia
import Testing

/// The box tree editor with values: drops, renames, new payloads and descents recompute every size on the way
/// up; a 64-bit size and a 'uuid' keep their header form; a size that does not fit is an error.
@Suite struct MP4BoxEditorTests {
    /// moov { trak { keep(4 bytes), gone(8 bytes) }, uuid(2 bytes) }, then a 64-bit-size mdat of 3 bytes.
    static func sample() -> [UInt8] {
        var w = MP4BoxWriter()
        w.box("moov") { w in
            w.box("trak") { w in
                w.box("keep") { w in w.bytes([1, 2, 3, 4]) }
                w.box("gone") { w in w.zeros(8) }
            }
        }
        var bytes = w.bytes
        // A 'uuid' box inside moov would need moov's size patched: put it at the top instead.
        bytes += [0, 0, 0, 26] + Array("uuid".utf8) + [UInt8](repeating: 0xAB, count: 16) + [7, 8]
        bytes += [0, 0, 0, 1] + Array("mdat".utf8) + [0, 0, 0, 0, 0, 0, 0, 19] + [9, 9, 9]
        return bytes
    }

    @Test("a dropped child shrinks every ancestor by its size; renames and new payloads rewrite the header; 64-bit sizes and uuid stay")
    func edits() throws {
        let bytes = Self.sample()
        let edited = try MP4BoxEditor.rewrite(bytes) { (box, path) throws(MediaError) -> MP4BoxEdit in
            switch (box.type, path.last) {
            case ("moov", nil): return .descend(skip: 0, type: nil)
            case ("trak", "moov"): return .descend(skip: 0, type: "kart")
            case ("gone", "trak"): return .drop
            case ("keep", "trak"): return .payload([5, 6])
            default: return .keep
            }
        }
        #expect(edited.count == bytes.count - 16 - 2)
        let top = try MP4Box.children(of: edited, in: 0..<edited.count)
        #expect(top.map(\.type) == ["moov", "uuid", "mdat"])
        #expect(top[0].size == 8 + 8 + 10)
        let kart = try #require(try top[0].children(in: edited).first)
        #expect(kart.type == "kart" && kart.size == 18)
        let keep = try #require(try kart.children(in: edited).first)
        #expect(keep.type == "keep" && Array(edited[keep.payload]) == [5, 6])
        #expect(top[1].userType == [UInt8](repeating: 0xAB, count: 16) && Array(edited[top[1].payload]) == [7, 8])
        #expect(top[2].headerSize == 16 && Array(edited[top[2].payload]) == [9, 9, 9])
        // A 64-bit box given a new payload keeps its 64-bit header with the new size.
        let grown = try MP4BoxEditor.rewrite(bytes) { (box, _) throws(MediaError) -> MP4BoxEdit in box.type == "mdat" ? .payload([1]) : .keep }
        let mdat = try #require(try MP4Box.children(of: grown, in: 0..<grown.count).last)
        #expect(mdat.headerSize == 16 && mdat.size == 17)
    }

    @Test("a skip past the payload and a tree nested deeper than the limit are typed errors")
    func refusals() throws {
        let bytes = Self.sample()
        #expect(throws: MediaError.self) {
            try MP4BoxEditor.rewrite(bytes) { (box, _) throws(MediaError) -> MP4BoxEdit in box.type == "moov" ? .descend(skip: 1000, type: nil) : .keep }
        }
        var nested: [UInt8] = []
        for _ in 0..<20 { nested = [0, 0, 0, UInt8(8 + nested.count)] + Array("moov".utf8) + nested }
        #expect(throws: MediaError.self) {
            try MP4BoxEditor.rewrite(nested) { (_, _) throws(MediaError) -> MP4BoxEdit in .descend(skip: 0, type: nil) }
        }
    }
}
