import Foundation

/// A Microsoft Smooth Streaming client manifest (SmoothStreamingMedia).
public struct SmoothManifest: Sendable, Equatable {
    /// One quality level of a stream.
    public struct QualityLevel: Sendable, Equatable {
        /// Its `@Index`.
        public var index: Int
        /// Its `@Bitrate`, bits per second.
        public var bitrate: Int
        /// Its `@FourCC` (`H264`, `AACL`, `EC-3`), when given.
        public var fourCC: String?
        /// Its `@MaxWidth`, when given.
        public var maxWidth: Int?
        /// Its `@MaxHeight`, when given.
        public var maxHeight: Int?
        /// Its `@SamplingRate`, when given.
        public var samplingRate: Int?
        /// Its `@Channels`, when given.
        public var channels: Int?
        /// Its `@CodecPrivateData` (hex): the decoder configuration.
        public var codecPrivateData: String?
        /// Bytes of each NAL unit's length prefix in H.264 fragments (`NALUnitLengthField`; 4 when absent).
        public var nalUnitLengthField: Int?
        /// An audio level's `@BitsPerSample`, `@PacketSize` (bytes per audio block) and `@AudioTag` (its WAVE format tag:
        /// 255 for AAC), as the Smooth Streaming client manifest lists them for audio.
        public var bitsPerSample: Int?, packetSize: Int?, audioTag: Int?

        /// A quality level.
        public init(index: Int, bitrate: Int, fourCC: String? = nil, maxWidth: Int? = nil, maxHeight: Int? = nil, samplingRate: Int? = nil,
                    channels: Int? = nil, codecPrivateData: String? = nil, nalUnitLengthField: Int? = nil, bitsPerSample: Int? = nil,
                    packetSize: Int? = nil, audioTag: Int? = nil) {
            self.bitsPerSample = bitsPerSample
            self.packetSize = packetSize
            self.audioTag = audioTag
            self.index = index
            self.bitrate = bitrate
            self.fourCC = fourCC
            self.maxWidth = maxWidth
            self.maxHeight = maxHeight
            self.samplingRate = samplingRate
            self.channels = channels
            self.codecPrivateData = codecPrivateData
            self.nalUnitLengthField = nalUnitLengthField
        }
    }

    /// One StreamIndex: a video, audio or text stream.
    public struct StreamIndex: Sendable, Equatable {
        /// "video", "audio" or "text".
        public var type: String
        /// Its `@Name`, when given.
        public var name: String?
        /// Its `@Language`, when given.
        public var language: String?
        /// Ticks per second of this stream's times (`StreamIndex@TimeScale`; nil: the manifest's).
        public var timescale: UInt64? = nil
        /// Fragment URL template, e.g. `QualityLevels({bitrate})/Fragments(video={start time})`.
        public var url: String
        /// Its quality levels.
        public var qualityLevels: [QualityLevel]
        /// Fragment start times (in the manifest timescale), expanded from the `c` elements.
        public var fragmentTimes: [UInt64]
        /// Fragment durations, parallel to `fragmentTimes`.
        public var fragmentDurations: [UInt64]

        /// A stream.
        public init(type: String, name: String? = nil, language: String? = nil, timescale: UInt64? = nil, url: String, qualityLevels: [QualityLevel],
                    fragmentTimes: [UInt64], fragmentDurations: [UInt64]) {
            self.type = type
            self.name = name
            self.language = language
            self.timescale = timescale
            self.url = url
            self.qualityLevels = qualityLevels
            self.fragmentTimes = fragmentTimes
            self.fragmentDurations = fragmentDurations
        }

        /// The URL of one fragment for a quality level.
        public func fragmentURL(bitrate: Int, startTime: UInt64) -> String {
            url.replacingOccurrences(of: "{bitrate}", with: String(bitrate)).replacingOccurrences(of: "{Bitrate}", with: String(bitrate))
                .replacingOccurrences(of: "{start time}", with: String(startTime)).replacingOccurrences(of: "{start_time}", with: String(startTime))
        }
    }

    /// Ticks per second (default 10,000,000).
    public var timescale: UInt64
    /// Duration in ticks.
    public var duration: UInt64
    /// True for a live presentation.
    public var isLive: Bool
    /// The streams.
    public var streams: [StreamIndex]
    /// The PlayReady protection header (base64), if present.
    public var protectionHeader: String?

    /// The most fragments one stream may list.
    public static let maxFragments = 1_000_000

    /// A manifest (on demand unless `isLive`).
    public init(timescale: UInt64 = 10_000_000, duration: UInt64, isLive: Bool = false, streams: [StreamIndex], protectionHeader: String? = nil) {
        self.timescale = timescale
        self.duration = duration
        self.isLive = isLive
        self.streams = streams
        self.protectionHeader = protectionHeader
    }

    /// Parses a manifest.
    public init(parsing text: String) throws(MediaError) {
        let root = try MarkupElement.parse(text)
        guard root.name == "SmoothStreamingMedia" else { throw .malformed("not a Smooth Streaming manifest (root \(root.name))") }
        timescale = root.attributes["TimeScale"].flatMap { UInt64($0) } ?? 10_000_000
        duration = root.attributes["Duration"].flatMap { UInt64($0) } ?? 0
        isLive = root.attributes["IsLive"]?.uppercased() == "TRUE"
        protectionHeader = root.child("Protection")?.child("ProtectionHeader")?.text.trimmingCharacters(in: .whitespacesAndNewlines)
        streams = []
        for stream in root.children("StreamIndex") {
            guard let url = stream.attributes["Url"] else { throw .malformed("StreamIndex without Url") }
            var times: [UInt64] = [], durations: [UInt64] = []
            var next: UInt64 = 0
            for c in stream.children("c") {
                let t = try c.attributes["t"].map { (text) throws(MediaError) -> UInt64 in
                    guard let value = UInt64(text) else { throw .malformed("Smooth c@t \(text.prefix(32))") }
                    return value
                } ?? next
                let d = c.attributes["d"].flatMap { UInt64($0) } ?? 0
                let repeats = c.attributes["r"].flatMap { Int($0) } ?? 1
                guard repeats >= 1, repeats <= Self.maxFragments - times.count else {
                    throw .malformed("Smooth c@r must be 1 to \(Self.maxFragments) fragments in all")
                }
                var start = t
                for _ in 0..<repeats {
                    times.append(start)
                    durations.append(d)
                    let (end, overflow) = start.addingReportingOverflow(d)
                    guard !overflow else { throw .malformed("Smooth fragment times overflow") }
                    start = end
                }
                next = start
            }
            let levels = stream.children("QualityLevel").map { q in
                QualityLevel(index: q.attributes["Index"].flatMap { Int($0) } ?? 0, bitrate: q.attributes["Bitrate"].flatMap { Int($0) } ?? 0,
                             fourCC: q.attributes["FourCC"], maxWidth: q.attributes["MaxWidth"].flatMap { Int($0) },
                             maxHeight: q.attributes["MaxHeight"].flatMap { Int($0) }, samplingRate: q.attributes["SamplingRate"].flatMap { Int($0) },
                             channels: q.attributes["Channels"].flatMap { Int($0) }, codecPrivateData: q.attributes["CodecPrivateData"],
                             nalUnitLengthField: q.attributes["NALUnitLengthField"].flatMap { Int($0) },
                             bitsPerSample: q.attributes["BitsPerSample"].flatMap { Int($0) }, packetSize: q.attributes["PacketSize"].flatMap { Int($0) },
                             audioTag: q.attributes["AudioTag"].flatMap { Int($0) })
            }
            let scale = try stream.attributes["TimeScale"].map { (text) throws(MediaError) -> UInt64 in
                guard let value = UInt64(text), value > 0 else { throw .malformed("StreamIndex TimeScale \(text.prefix(32))") }
                return value
            }
            streams.append(StreamIndex(type: stream.attributes["Type"] ?? "", name: stream.attributes["Name"], language: stream.attributes["Language"],
                                       timescale: scale, url: url, qualityLevels: levels, fragmentTimes: times, fragmentDurations: durations))
        }
    }
}

extension SmoothManifest {
    /// The manifest text (streams, quality levels and fragment timelines; the protection header when present).
    public var text: String {
        var lines = ["<?xml version=\"1.0\" encoding=\"UTF-8\"?>",
                     "<SmoothStreamingMedia MajorVersion=\"2\" MinorVersion=\"2\" TimeScale=\"\(timescale)\" Duration=\"\(duration)\"\(isLive ? " IsLive=\"TRUE\"" : "")>"]
        if let protectionHeader {
            lines += ["  <Protection>",
                      "    <ProtectionHeader SystemID=\"9a04f079-9840-4286-ab92-e65be0885f95\">\(xmlEscape(protectionHeader))</ProtectionHeader>",
                      "  </Protection>"]
        }
        for stream in streams {
            var open = "  <StreamIndex Type=\"\(xmlEscape(stream.type))\""
            if let name = stream.name { open += " Name=\"\(xmlEscape(name))\"" }
            if let language = stream.language { open += " Language=\"\(xmlEscape(language))\"" }
            if let scale = stream.timescale { open += " TimeScale=\"\(scale)\"" }
            open += " Url=\"\(xmlEscape(stream.url))\" Chunks=\"\(stream.fragmentTimes.count)\" QualityLevels=\"\(stream.qualityLevels.count)\">"
            lines.append(open)
            for level in stream.qualityLevels {
                var element = "    <QualityLevel Index=\"\(level.index)\" Bitrate=\"\(level.bitrate)\""
                let optional: [(String, String?)] = [("FourCC", level.fourCC), ("MaxWidth", level.maxWidth.map(String.init)),
                                                     ("MaxHeight", level.maxHeight.map(String.init)),
                                                     ("SamplingRate", level.samplingRate.map(String.init)),
                                                     ("Channels", level.channels.map(String.init)),
                                                     ("BitsPerSample", level.bitsPerSample.map(String.init)), ("PacketSize", level.packetSize.map(String.init)),
                                                     ("AudioTag", level.audioTag.map(String.init)), ("CodecPrivateData", level.codecPrivateData),
                                                     ("NALUnitLengthField", level.nalUnitLengthField.map(String.init))]
                for case let (name, value?) in optional { element += " \(name)=\"\(xmlEscape(value))\"" }
                lines.append(element + "/>")
            }
            var end: UInt64?
            for (time, duration) in zip(stream.fragmentTimes, stream.fragmentDurations) {
                lines.append(time == end ? "    <c d=\"\(duration)\"/>" : "    <c t=\"\(time)\" d=\"\(duration)\"/>")
                end = time + duration
            }
            lines.append("  </StreamIndex>")
        }
        lines.append("</SmoothStreamingMedia>")
        return lines.joined(separator: "\n") + "\n"
    }
}
