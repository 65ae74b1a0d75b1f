import Foundation
import SatchelBytes
import SatchelMedia
import SatchelPackager
import SatchelTestSupport
import Testing

/// The sample auxiliary information of every CMAF fragment is well formed (ISO/IEC 14496-12 8.7.8–8.7.9, ISO/IEC
/// 23001-7 7.2): what a browser's demuxer checks, checked here without a browser.
@Suite("CMAF: senc, saiz and saio are well formed for every track and scheme")
struct AuxiliaryInfoTests {
    struct Fragment {
        var sampleCount: Int
        var senc: (count: Int, dataStart: Int)?
        var saiz: (defaultSize: Int, count: Int, sizes: [Int])?
        var saio: [Int]?
    }

    static func fragment(_ bytes: [UInt8]) throws -> Fragment {
        let top = try MP4Box.children(of: bytes, in: 0..<bytes.count)
        let moof = try #require(top.first("moof"))
        let traf = try #require(try moof.children(in: bytes).first("traf"))
        let boxes = try traf.children(in: bytes)
        let trun = try #require(boxes.first("trun"))
        var reader = try trun.fullBoxReader(in: bytes).reader
        var fragment = Fragment(sampleCount: Int(try reader.readUInt32()))
        if let senc = boxes.first("senc") {
            var r = try senc.fullBoxReader(in: bytes).reader
            fragment.senc = (Int(try r.readUInt32()), senc.payload.lowerBound + 8 - moof.offset)
        }
        if let saiz = boxes.first("saiz") {
            let (_, flags, r0) = try saiz.fullBoxReader(in: bytes)
            var r = r0
            if flags & 1 != 0 { _ = try r.readUInt32(); _ = try r.readUInt32() }
            let defaultSize = Int(try r.readUInt8()), count = Int(try r.readUInt32())
            var sizes: [Int] = []
            if defaultSize == 0 { for _ in 0..<count { sizes.append(Int(try r.readUInt8())) } }
            #expect(r.remaining == 0, "saiz has no bytes beyond its table")
            fragment.saiz = (defaultSize, count, sizes)
        }
        if let saio = boxes.first("saio") {
            let (version, flags, r0) = try saio.fullBoxReader(in: bytes)
            var r = r0
            if flags & 1 != 0 { _ = try r.readUInt32(); _ = try r.readUInt32() }
            let count = Int(try r.readUInt32())
            fragment.saio = try (0..<count).map { _ in version == 1 ? Int(try r.readUInt64()) : Int(try r.readUInt32()) }
        }
        return fragment
    }

    @Test("cbcs and cenc, video and audio: auxiliary info where a sample has some, none where none does", arguments: [PackageScheme.cbcs, .cenc])
    func wellFormed(_ scheme: PackageScheme) async throws {
        let out = try await TestMedia.offloaded { try PackagerTests.package(.cmaf, scheme, label: "-aux") }
        var checked = 0
        for rendition in try FileManager.default.contentsOfDirectory(atPath: out.path) where !rendition.contains(".") {
            let directory = out.appendingPathComponent(rendition)
            for name in try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() where name.hasSuffix(".m4s") {
                let fragment = try Self.fragment(try TestMedia.bytes(directory.appendingPathComponent(name)))
                let label = "\(scheme) \(rendition)/\(name)"
                if let saiz = fragment.saiz {
                    #expect(saiz.count == fragment.sampleCount, "\(label)")
                    #expect(saiz.defaultSize > 0 || saiz.sizes.contains { $0 > 0 }, "\(label): auxiliary info of 0 bytes is written as none")
                    #expect(fragment.senc?.count == fragment.sampleCount, "\(label)")
                    #expect(fragment.saio == [fragment.senc?.dataStart ?? -1], "\(label): saio points at the first sample's data in senc")
                } else {
                    #expect(fragment.senc == nil && fragment.saio == nil, "\(label): senc, saiz and saio go together")
                    #expect(scheme == .cbcs && rendition.hasPrefix("audio"), "\(label): only cbcs audio (constant IV, whole samples) needs none")
                }
                checked += 1
            }
        }
        #expect(checked > 2)
    }
}
