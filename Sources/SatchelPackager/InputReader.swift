import Foundation
import SatchelMedia

/// Reads input files and demuxes them into tracks.
enum InputReader {
    /// The tracks of one input file, sniffing MP4/MOV or MPEG-TS.
    static func tracks(of path: String) throws(PackagerError) -> [MediaTrack] {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path), options: .mappedIfSafe)
        } catch {
            throw .input(file: path, reason: "cannot read the file")
        }
        let bytes = [UInt8](data)
        guard bytes.count >= 8 else { throw .input(file: path, reason: "the file is too short to be media") }
        do {
            if bytes[0] == 0x47 && (bytes.count < 189 || bytes[188] == 0x47) {
                return try TSDemuxer.demux(bytes)
            }
            return try MP4Demuxer.demux(bytes)
        } catch {
            throw .input(file: path, reason: "\(error)")
        }
    }
}
