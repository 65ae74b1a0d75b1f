import Foundation
import SatchelMedia
import SatchelTestSupport
import Testing

/// One package for every DRM (`satchel package --drm`): Widevine, PlayReady, FairPlay and Clear Key signalled in the
/// init segments, the MPD and the HLS playlists, checked against Shaka Packager's output for the same key and by an
/// independent reader in Python. (Playing such packages: `PlayCommandTests` "every scheme", `BrowserPlayerTests`,
/// `ShakaInteropTests`.)
@Suite(.serialized) struct MultiDRMPackageTests {
    static let keyID = ShakaInteropTests.keyID, key = ShakaInteropTests.key

    /// A short source, and a folder for the packages.
    static func stage(_ name: String) async throws -> (input: URL, folder: URL) {
        try TestMedia.require("ffmpeg")
        let folder = try TestMedia.temporaryDirectory("multi-drm-\(name)")
        return await (try TestMedia.make("multi-drm", seconds: 4, size: "320x180"), folder)
    }

    /// The `pssh` boxes of an init segment's `moov`, by system ID (hex).
    static func psshBoxes(_ file: URL) throws -> [String: [UInt8]] {
        let bytes = [UInt8](try Data(contentsOf: file))
        let moov = try #require(try MP4Box.children(of: bytes, in: 0..<bytes.count).first("moov"))
        var boxes: [String: [UInt8]] = [:]
        for box in try moov.children(in: bytes).all("pssh") {
            let system = bytes[(box.offset + 12)..<(box.offset + 28)].map { String(format: "%02x", $0) }.joined()
            boxes[system] = Array(bytes[box.offset..<(box.offset + box.size)])
        }
        return boxes
    }

    /// The MPD's `cenc:pssh` and `mspr:pro` values, by scheme URI, of its first adaptation set.
    static func mpdSignalling(_ file: URL) throws -> [String: (pssh: String?, pro: String?)] {
        let root = try MarkupElement.parse(try String(contentsOf: file, encoding: .utf8))
        let set = try #require(root.child("Period")?.child("AdaptationSet"))
        var found: [String: (pssh: String?, pro: String?)] = [:]
        for element in set.children("ContentProtection") {
            found[element.attributes["schemeIdUri"]?.lowercased() ?? ""] = (element.child("pssh")?.text.trimmingCharacters(in: .whitespacesAndNewlines),
                                                                            element.child("pro")?.text.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        return found
    }

    @Test("Widevine's and PlayReady's pssh boxes (init segment and MPD) and PlayReady's mspr:pro are Shaka Packager's, byte for byte, for the same key: cenc (PlayReady header 4.0 with its checksum) and cbcs (4.3), with a license URL that needs escaping")
    func sameAsShaka() async throws {
        let (input, folder) = try await Self.stage("shaka")
        let licenseURL = "https://licenses.example/playready?tenant=a&asset=b"
        try await TestMedia.offloaded { () throws -> Void in
            for scheme in ["cenc", "cbcs"] {
                let satchel = folder.appendingPathComponent("satchel-\(scheme)"), shaka = folder.appendingPathComponent("shaka-\(scheme)")
                let packaged = try CLIRunner.run(["package", input.path, "--out", satchel.path, "--format", "cmaf", "--scheme", scheme,
                                                  "--key-id", Self.keyID, "--key", Self.key, "--drm", "widevine,playready,clearkey",
                                                  "--playready-license-url", licenseURL])
                #expect(packaged.status == 0, "\(packaged.stderr)")
                #expect(packaged.stdout.contains("scheme \(scheme) for clearkey, playready, widevine"), "\(packaged.stdout)")
                let made = try ProcessRunner.run(try TestMedia.shakaPackager(), [
                    "in=\(input.path),stream=video,init_segment=\(shaka.path)/video/init.mp4,segment_template=\(shaka.path)/video/$Number$.m4s",
                    "--enable_raw_key_encryption", "--keys", "label=:key_id=\(Self.keyID):key=\(Self.key)", "--protection_scheme", scheme,
                    "--protection_systems", "Widevine,PlayReady,CommonSystem", "--mpd_output", shaka.appendingPathComponent("manifest.mpd").path,
                    "--playready_extra_header_data", "<LA_URL>\(licenseURL.replacingOccurrences(of: "&", with: "&amp;"))</LA_URL>"])
                #expect(made.status == 0, "Shaka: \(made.stderr.suffix(400))")

                let ours = try Self.psshBoxes(satchel.appendingPathComponent("video_0/init.mp4"))
                let theirs = try Self.psshBoxes(shaka.appendingPathComponent("video/init.mp4"))
                #expect(Set(ours.keys) == ["1077efecc0b24d02ace33c1e52e2fb4b", "9a04f07998404286ab92e65be0885f95", "edef8ba979d64acea3c827dcd51d21ed"])
                for (system, box) in theirs {
                    #expect(ours[system] == box, "\(scheme): the \(system) pssh differs from Shaka's")
                }
                let ourMPD = try Self.mpdSignalling(satchel.appendingPathComponent("manifest.mpd"))
                let theirMPD = try Self.mpdSignalling(shaka.appendingPathComponent("manifest.mpd"))
                for system in ["urn:uuid:9a04f079-9840-4286-ab92-e65be0885f95", "urn:uuid:edef8ba9-79d6-4ace-a3c8-27dcd51d21ed",
                               "urn:uuid:1077efec-c0b2-4d02-ace3-3c1e52e2fb4b"] {
                    #expect(ourMPD[system]?.pssh != nil && ourMPD[system]?.pssh == theirMPD[system]?.pssh, "\(scheme) \(system): the MPD's pssh")
                }
                let playReady = ourMPD["urn:uuid:9a04f079-9840-4286-ab92-e65be0885f95"]?.pro
                #expect(playReady != nil && playReady == theirMPD["urn:uuid:9a04f079-9840-4286-ab92-e65be0885f95"]?.pro, "\(scheme): mspr:pro")
            }
        }
    }

    /// Reads a package as a player of each system would, without Satchel's code: the init segment's boxes walked by
    /// hand, Widevine's protobuf decoded by hand, PlayReady's XML parsed and its checksum recomputed with the
    /// `cryptography` package, the MPD with ElementTree and the HLS key tags with the `m3u8` package. Prints JSON.
    static let reader = #"""
        import base64, json, re, struct, sys, xml.etree.ElementTree as ET
        import m3u8
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
        folder, key = sys.argv[1], bytes.fromhex(sys.argv[2])
        COMMON, WIDEVINE, PLAYREADY = "1077efecc0b24d02ace33c1e52e2fb4b", "edef8ba979d64acea3c827dcd51d21ed", "9a04f07998404286ab92e65be0885f95"

        def varint(data, at):
            value, shift = 0, 0
            while True:
                byte = data[at]; at += 1
                value |= (byte & 0x7f) << shift; shift += 7
                if byte < 0x80: return value, at

        def widevine(data):
            fields, at = {}, 0
            while at < len(data):
                tag, at = varint(data, at)
                number, wire = tag >> 3, tag & 7
                if wire == 0:
                    value, at = varint(data, at)
                    fields.setdefault(number, []).append(struct.pack(">I", value).decode())
                elif wire == 2:
                    length, at = varint(data, at)
                    fields.setdefault(number, []).append(data[at:at + length].hex()); at += length
                else:
                    raise ValueError("wire type %d" % wire)
            return {"kids": fields.get(2, []), "provider": bytes.fromhex(fields[3][0]).decode() if 3 in fields else None,
                    "content_id": bytes.fromhex(fields[4][0]).decode() if 4 in fields else None, "scheme": fields.get(9, [None])[0]}

        def guid_to_kid(guid):
            g = base64.b64decode(guid)
            return (g[3::-1] + g[5:3:-1] + g[7:5:-1] + g[8:]).hex()

        def playready(pro):
            length, count = struct.unpack("<IH", pro[:6])
            assert length == len(pro) and count == 1, (length, len(pro), count)
            kind, size = struct.unpack("<HH", pro[6:10])
            assert kind == 1 and size == len(pro) - 10
            root = ET.fromstring(pro[10:].decode("utf-16-le"))
            ns = {"pr": "http://schemas.microsoft.com/DRM/2007/03/PlayReadyHeader"}
            result = {"version": root.get("version"), "la_url": root.findtext("pr:DATA/pr:LA_URL", namespaces=ns)}
            kid = root.find("pr:DATA/pr:KID", ns)
            if kid is not None:
                guid = kid.text
                result.update(algorithm=root.findtext("pr:DATA/pr:PROTECTINFO/pr:ALGID", namespaces=ns),
                              keylen=root.findtext("pr:DATA/pr:PROTECTINFO/pr:KEYLEN", namespaces=ns))
                encryptor = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
                expected = base64.b64encode((encryptor.update(base64.b64decode(guid)) + encryptor.finalize())[:8]).decode()
                result["checksum_ok"] = root.findtext("pr:DATA/pr:CHECKSUM", namespaces=ns) == expected
            else:
                kid = root.find("pr:DATA/pr:PROTECTINFO/pr:KIDS/pr:KID", ns)
                guid = kid.get("VALUE")
                result.update(algorithm=kid.get("ALGID"), checksum=kid.get("CHECKSUM"))
            result["kid"] = guid_to_kid(guid)
            return result

        def pssh(box):
            size, kind, version = struct.unpack(">I4sB", box[:9])
            system = box[12:28].hex()
            at, kids = 28, []
            if version >= 1:
                (count,) = struct.unpack(">I", box[at:at + 4]); at += 4
                kids = [box[at + 16 * i:at + 16 * i + 16].hex() for i in range(count)]; at += 16 * count
            (length,) = struct.unpack(">I", box[at:at + 4])
            data = box[at + 4:at + 4 + length]
            assert at + 4 + length == size == len(box)
            entry = {"version": version, "kids": kids}
            if system == WIDEVINE: entry["widevine"] = widevine(data)
            if system == PLAYREADY: entry["playready"] = playready(data)
            return system, entry

        def boxes(data, start, end):
            at = start
            while at < end:
                size, kind = struct.unpack(">I4s", data[at:at + 8])
                yield kind.decode(), data[at:at + size]
                at += size

        init = open(folder + "/video_0/init.mp4", "rb").read()
        moov = next(box for kind, box in boxes(init, 0, len(init)) if kind == "moov")
        out = {"init": dict(pssh(box) for kind, box in boxes(moov, 8, len(moov)) if kind == "pssh")}

        mpd = ET.parse(folder + "/manifest.mpd").getroot()
        ns = {"d": "urn:mpeg:dash:schema:mpd:2011", "cenc": "urn:mpeg:cenc:2013", "mspr": "urn:microsoft:playready"}
        out["mpd"] = []
        for adaptation in mpd.iter("{urn:mpeg:dash:schema:mpd:2011}AdaptationSet"):
            elements = {}
            for element in adaptation.findall("d:ContentProtection", ns):
                entry = {"value": element.get("value"), "default_kid": element.get("{urn:mpeg:cenc:2013}default_KID")}
                box = element.findtext("cenc:pssh", namespaces=ns)
                if box: entry["pssh"] = pssh(base64.b64decode(box))[1]
                pro = element.findtext("mspr:pro", namespaces=ns)
                if pro: entry["pro"] = playready(base64.b64decode(pro))
                elements[element.get("schemeIdUri").lower()] = entry
            out["mpd"].append(elements)

        media = m3u8.load(folder + "/video_0/index.m3u8")
        out["hls"] = []
        for key_tag in media.keys:
            if key_tag is None: continue
            entry = {"method": key_tag.method, "keyformat": key_tag.keyformat, "versions": key_tag.keyformatversions, "uri": key_tag.uri,
                     "iv": key_tag.iv}
            keyid = re.search(r'KEYID=(0x[0-9a-fA-F]+)', open(folder + "/video_0/index.m3u8").read())
            if key_tag.uri.startswith("data:text/plain;base64,"):
                system, parsed = pssh(base64.b64decode(key_tag.uri.split(",", 1)[1]))
                entry.update(system=system, pssh=parsed, keyid=keyid.group(1) if keyid else None)
            elif key_tag.uri.startswith("data:text/plain;charset=UTF-16;base64,"):
                entry["pro"] = playready(base64.b64decode(key_tag.uri.split(",", 1)[1]))
            out["hls"].append(entry)
        master = m3u8.load(folder + "/master.m3u8")
        out["session_keys"] = [key_tag.keyformat for key_tag in master.session_keys if key_tag is not None]
        print(json.dumps(out))
        """#

    /// What ``reader`` prints for the package in `folder`.
    static func read(_ folder: URL) throws -> [String: Any] {
        let python3 = try #require(TestMedia.which("python3"), "python3 is required")
        let result = try ProcessRunner.run(python3, ["-c", reader, folder.path, key])
        #expect(result.status == 0, "\(result.stderr.suffix(800))")
        return try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result.stdout.prefix(400))")
    }

    @Test("an independent reader (Python: boxes by hand, Widevine's protobuf by hand, PlayReady's XML with its checksum recomputed, m3u8) finds every system in the init segment, the MPD and the HLS playlist: key IDs, schemes, versions, provider, content ID, license URL, KEYFORMAT and KEYFORMATVERSIONS")
    func independentReader() async throws {
        let (input, folder) = try await Self.stage("reader")
        let kid = Self.keyID
        try await TestMedia.offloaded { () throws -> Void in
            for scheme in ["cbcs", "cenc"] {
                let out = folder.appendingPathComponent(scheme)
                var arguments = ["package", input.path, "--out", out.path, "--format", "cmaf", "--scheme", scheme, "--key-id", kid, "--key", Self.key,
                                 "--widevine-provider", "satchel-tests", "--content-id", "movie-42", "--playready-license-url", "https://pr.example/rightsmanager.asmx"]
                arguments += scheme == "cbcs" ? ["--drm", "fairplay,widevine,playready,clearkey", "--asset-id", "movie-42", "--fairplay-versions", "1/2"]
                    : ["--drm", "widevine,playready,clearkey"]
                let packaged = try CLIRunner.run(arguments)
                #expect(packaged.status == 0, "\(packaged.stderr)")
                let read = try Self.read(out)

                let initBoxes = read["init"] as? [String: [String: Any]] ?? [:]
                #expect(Set(initBoxes.keys) == ["1077efecc0b24d02ace33c1e52e2fb4b", "edef8ba979d64acea3c827dcd51d21ed", "9a04f07998404286ab92e65be0885f95"],
                        "\(scheme): \(initBoxes.keys)")
                #expect(initBoxes["1077efecc0b24d02ace33c1e52e2fb4b"]?["version"] as? Int == 1
                        && initBoxes["1077efecc0b24d02ace33c1e52e2fb4b"]?["kids"] as? [String] == [kid], "Clear Key's common box lists the key ID")
                let widevine = initBoxes["edef8ba979d64acea3c827dcd51d21ed"]?["widevine"] as? [String: Any]
                #expect(initBoxes["edef8ba979d64acea3c827dcd51d21ed"]?["version"] as? Int == 0)
                #expect(widevine?["kids"] as? [String] == [kid] && widevine?["scheme"] as? String == scheme
                        && widevine?["provider"] as? String == "satchel-tests" && widevine?["content_id"] as? String == "movie-42", "\(String(describing: widevine))")
                let playReady = initBoxes["9a04f07998404286ab92e65be0885f95"]?["playready"] as? [String: Any]
                #expect(playReady?["kid"] as? String == kid && playReady?["la_url"] as? String == "https://pr.example/rightsmanager.asmx")
                if scheme == "cenc" {
                    #expect(playReady?["version"] as? String == "4.0.0.0" && playReady?["algorithm"] as? String == "AESCTR"
                            && playReady?["keylen"] as? String == "16" && playReady?["checksum_ok"] as? Bool == true, "\(String(describing: playReady))")
                } else {
                    #expect(playReady?["version"] as? String == "4.3.0.0" && playReady?["algorithm"] as? String == "AESCBC"
                            && playReady?["checksum"] is NSNull, "\(String(describing: playReady))")
                }

                // The MPD: every adaptation set (video and audio) signals the scheme with its default KID and each system.
                let sets = read["mpd"] as? [[String: [String: Any]]] ?? []
                #expect(sets.count == 2)
                for set in sets {
                    #expect(set["urn:mpeg:dash:mp4protection:2011"]?["value"] as? String == scheme
                            && (set["urn:mpeg:dash:mp4protection:2011"]?["default_kid"] as? String)?.replacingOccurrences(of: "-", with: "") == kid)
                    #expect(set["urn:uuid:9a04f079-9840-4286-ab92-e65be0885f95"]?["value"] as? String == "MSPR 2.0")
                    #expect((set["urn:uuid:9a04f079-9840-4286-ab92-e65be0885f95"]?["pro"] as? [String: Any])?["kid"] as? String == kid)
                    #expect(((set["urn:uuid:edef8ba9-79d6-4ace-a3c8-27dcd51d21ed"]?["pssh"] as? [String: Any])?["widevine"] as? [String: Any])?["kids"] as? [String] == [kid])
                    #expect((set["urn:uuid:1077efec-c0b2-4d02-ace3-3c1e52e2fb4b"]?["pssh"] as? [String: Any])?["kids"] as? [String] == [kid])
                    #expect(set["urn:uuid:94ce86fb-07ff-4f43-adb8-93d2fa968ca2"] == nil, "FairPlay has no DASH signalling")
                }

                // HLS: a tag per system, each with the method of the scheme.
                let tags = read["hls"] as? [[String: Any]] ?? []
                let method = scheme == "cbcs" ? "SAMPLE-AES" : "SAMPLE-AES-CTR"
                #expect(tags.allSatisfy { $0["method"] as? String == method }, "\(tags)")
                let formats = tags.compactMap { $0["keyformat"] as? String }
                let expected = (scheme == "cbcs" ? ["com.apple.streamingkeydelivery"] : [])
                    + ["identity", "com.microsoft.playready", "urn:uuid:edef8ba9-79d6-4ace-a3c8-27dcd51d21ed"]
                #expect(formats == expected, "FairPlay's first, then the packagers' order: \(formats)")
                let widevineTag = tags.first { $0["keyformat"] as? String == "urn:uuid:edef8ba9-79d6-4ace-a3c8-27dcd51d21ed" }
                #expect(widevineTag?["system"] as? String == "edef8ba979d64acea3c827dcd51d21ed" && widevineTag?["keyid"] as? String == "0x" + kid
                        && ((widevineTag?["pssh"] as? [String: Any])?["widevine"] as? [String: Any])?["kids"] as? [String] == [kid])
                let playReadyTag = tags.first { $0["keyformat"] as? String == "com.microsoft.playready" }
                #expect((playReadyTag?["pro"] as? [String: Any])?["kid"] as? String == kid && playReadyTag?["versions"] as? String == "1")
                let identity = tags.first { $0["keyformat"] as? String == "identity" }
                #expect(identity?["uri"] as? String == "/keys/\(kid)" && (identity?["iv"] as? String)?.hasPrefix("0x") == true)
                if scheme == "cbcs" {
                    let fairPlay = tags.first { $0["keyformat"] as? String == "com.apple.streamingkeydelivery" }
                    #expect(fairPlay?["uri"] as? String == "skd://movie-42" && fairPlay?["versions"] as? String == "1/2",
                            "the FairPlay key URI defaults to the asset ID; KEYFORMATVERSIONS as given: \(String(describing: fairPlay))")
                }
                #expect(read["session_keys"] as? [String] == expected, "the master playlist declares every key tag")
            }

            // Without --fairplay-versions, KEYFORMATVERSIONS lists the versions Satchel's key server supports.
            let plain = folder.appendingPathComponent("fairplay-default")
            let packaged = try CLIRunner.run(["package", input.path, "--out", plain.path, "--format", "hls-ts", "--scheme", "sample-aes", "--drm", "fairplay"])
            #expect(packaged.status == 0, "\(packaged.stderr)")
            let media = try String(contentsOf: plain.appendingPathComponent("video_0/index.m3u8"), encoding: .utf8)
            #expect(media.contains(#"#EXT-X-KEY:METHOD=SAMPLE-AES,URI="skd://fairplay-default",KEYFORMAT="com.apple.streamingkeydelivery",KEYFORMATVERSIONS="1""#)
                    && !media.contains("identity"), "\(media)")
        }
    }

    @Test("refused with a clear error, nothing written: an unknown system, Widevine or PlayReady outside CMAF cenc/cbcs, FairPlay with cenc, --drm on a clear package, a license URL that is not http(s), versions that are not numbers, settings for a system not asked for")
    func refusals() async throws {
        let (input, folder) = try await Self.stage("refusals")
        try await TestMedia.offloaded { () throws -> Void in
            for (arguments, words) in [
                (["--format", "cmaf", "--scheme", "cbcs", "--drm", "widevine,marlin"], #"no DRM system "marlin"; name some of clearkey, widevine, playready, fairplay"#),
                (["--format", "hls-ts", "--scheme", "sample-aes", "--drm", "widevine"], "--drm widevine needs --format cmaf with --scheme cenc or cbcs"),
                (["--format", "hls-ts", "--scheme", "aes-128", "--drm", "playready"], "--drm playready needs --format cmaf with --scheme cenc or cbcs"),
                (["--format", "cmaf", "--scheme", "cenc", "--drm", "fairplay"], "--drm fairplay needs --scheme sample-aes or cbcs"),
                (["--format", "cmaf", "--drm", "clearkey"], "--drm needs a protected --scheme"),
                (["--format", "cmaf", "--scheme", "cenc", "--drm", "playready", "--playready-license-url", "file:///etc/passwd"],
                 "--playready-license-url must be an http or https URL"),
                (["--format", "cmaf", "--scheme", "cbcs", "--drm", "fairplay", "--fairplay-versions", "1/two"], "--fairplay-versions lists versions"),
                (["--format", "cmaf", "--scheme", "cbcs", "--drm", "clearkey", "--widevine-provider", "x"], "--widevine-provider and --content-id go with --drm widevine"),
                (["--format", "cmaf", "--scheme", "cbcs", "--drm", "widevine", "--fairplay-uri", "skd://x"], "--fairplay-uri goes with --drm fairplay"),
            ] {
                let out = folder.appendingPathComponent("refused")
                let result = try CLIRunner.run(["package", input.path, "--out", out.path] + arguments)
                #expect(result.status != 0 && result.stderr.contains(words), "\(arguments): \(result.stderr)")
                #expect(!FileManager.default.fileExists(atPath: out.path) && !FileManager.default.fileExists(atPath: out.path + ".keys.json"), "\(arguments)")
            }
        }
    }
}
