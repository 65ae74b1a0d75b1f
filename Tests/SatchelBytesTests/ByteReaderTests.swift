import Testing
@testable import SatchelBytes

@Suite("Byte reader and writer")
struct ByteReaderTests {
    @Test("integers round-trip big-endian")
    func roundTrip() throws {
        var writer = ByteWriter()
        writer.writeUInt8(0xAB)
        writer.writeUInt16(0x1234)
        writer.writeUInt24(0x56789A)
        writer.writeUInt32(0xDEAD_BEEF)
        writer.writeUInt64(0x0102_0304_0506_0708)
        #expect(writer.bytes.prefix(3) == [0xAB, 0x12, 0x34])
        var reader = ByteReader(writer.bytes)
        #expect(try reader.readUInt8() == 0xAB)
        #expect(try reader.readUInt16() == 0x1234)
        #expect(try reader.readUInt24() == 0x56789A)
        #expect(try reader.readUInt32() == 0xDEAD_BEEF)
        #expect(try reader.readUInt64() == 0x0102_0304_0506_0708)
        #expect(reader.isAtEnd)
    }

    @Test("reads past the end throw and leave the cursor in place")
    func truncation() throws {
        var reader = ByteReader([1, 2, 3])
        #expect(throws: ByteReaderError.truncated(needed: 4, available: 3, at: 0)) { try reader.readUInt32() }
        #expect(reader.offset == 0)
        #expect(throws: ByteReaderError.invalidLength(-1, at: 0)) { try reader.readBytes(-1) }
        #expect(throws: ByteReaderError.invalidLength(9, at: 0)) { try reader.readInteger(byteCount: 9) }
        #expect(try reader.readBytes(3) == [1, 2, 3])
        #expect(throws: ByteReaderError.self) { try reader.skip(1) }
        #expect(reader.readRemaining() == [])
    }

    @Test("random reads on random input never trap")
    func randomReads() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            var reader = ByteReader((0..<Int.random(in: 0...32, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) })
            for _ in 0..<10 {
                _ = try? reader.readBytes(Int.random(in: -4...40, using: &generator))
                _ = try? reader.readInteger(byteCount: Int.random(in: -1...10, using: &generator))
            }
            #expect(reader.offset <= reader.bytes.count)
        }
    }

    @Test("hex decodes strictly and never echoes its input in errors")
    func hex() throws {
        #expect(try Hex.decode("0xDEAD beef") == [0xDE, 0xAD, 0xBE, 0xEF])
        #expect(Hex.encode([0, 15, 255]) == "000fff")
        #expect(throws: HexError.oddLength) { try Hex.decode("abc") }
        #expect(throws: HexError.invalidCharacter) { try Hex.decode("zz") }
        #expect(throws: HexError.wrongLength(expected: 16, actual: 2)) { try Hex.decode("abcd", count: 16) }
        #expect(!HexError.invalidCharacter.description.contains("zz"))
    }

    @Test("constant-time equality and secret redaction")
    func secrets() {
        #expect(ConstantTime.equals([1, 2, 3], [1, 2, 3]))
        #expect(!ConstantTime.equals([1, 2, 3], [1, 2, 4]))
        #expect(!ConstantTime.equals([1, 2], [1, 2, 3]))
        let secret = SecretBytes([0xAA, 0xBB])
        #expect("\(secret)" == "<secret: 2 bytes>")
        #expect(secret == SecretBytes([0xAA, 0xBB]))
    }

    @Test("secure padding is never all zeros nor all 0xFF")
    func padding() {
        for count in 1...40 {
            let pad = SecureRandom.padding(count)
            #expect(pad.count == count)
            #expect(pad.contains { $0 != 0 } && pad.contains { $0 != 0xFF })
        }
        #expect(SecureRandom.padding(0).isEmpty)
    }
}
