import SatchelProtection
import SatchelSystem

/// HLS AES-128 segments made but not yet written, encrypted four at a time: CBC chains every block of a segment to the
/// one before, so one segment keeps the processor's AES unit waiting; four segments of one key go through it together
/// in about the time of one (``SegmentCipher/encrypt(inPlace:ivs:)``), then go to the writers.
struct EncryptionBatch {
    /// The most segments encrypted together.
    static let width = 4

    private var cipher: SegmentCipher?
    private var keyID: KeyID?
    private var segments: [[UInt8]] = []
    private var ivs: [[UInt8]] = []
    private var paths: [String] = []

    /// Adds a segment's clear bytes for `path` under `key`; a full batch, or a batch under another key, is encrypted and
    /// written first.
    mutating func add(_ payload: consuming [UInt8], key: ContentKey, path: String, to directory: PackageDirectory,
                      returningTo pool: BufferPool) throws(PackagerError) {
        if keyID != key.keyID || segments.count == Self.width { try flush(to: directory, returningTo: pool) }
        if keyID != key.keyID {
            do { cipher = try SegmentCipher(key: key.key) } catch { throw .invalidOptions("\(error)") }
            keyID = key.keyID
        }
        segments.append(payload)
        ivs.append(key.iv)
        paths.append(path)
    }

    /// Hands the segments waiting to a writer, which encrypts them (four chains at once) and writes them while the
    /// next batch is made.
    mutating func flush(to directory: PackageDirectory, returningTo pool: BufferPool) throws(PackagerError) {
        guard let cipher, !segments.isEmpty else { return }
        let batchIVs = ivs
        var handed: [[UInt8]] = []
        swap(&handed, &segments)  // the writer gets the only references: no copy
        try directory.write(handing: handed, to: paths, returningTo: pool) { segments in try cipher.encrypt(inPlace: &segments, ivs: batchIVs) }
        segments = []
        ivs = []
        paths = []
    }
}
