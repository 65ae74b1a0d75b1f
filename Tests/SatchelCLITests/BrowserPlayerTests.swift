import Foundation
import SatchelTestSupport
import Testing

/// The browser player (`/play/{assetId}`) in headless Chromium: CMAF `cenc` and `cbcs` packages played from the
/// origin with Media Source and Encrypted Media Extensions (W3C Clear Key), licenses from `/clearkey/license`.
/// Screenshots of every case are saved in the test artifacts (`.build/test-artifacts/`).
@Suite(.serialized) struct BrowserPlayerTests {
    /// A server publishing `site/` with two multi-DRM packages of a 20-second 640×360 + 320×180 ladder: `movie-cenc`
    /// (Clear Key, PlayReady, Widevine) and `movie-cbcs` (FairPlay too), their keys registered for those asset IDs.
    /// The player must find Clear Key's signalling among the others.
    static func world(_ name: String) async throws -> AgentCommandTests.Server {
        try TestMedia.require("ffmpeg")
        let server = try await AgentCommandTests.Server(name)
        let site = server.directory.appendingPathComponent("site")
        try FileManager.default.createDirectory(at: site, withIntermediateDirectories: true)
        try await TestMedia.offloaded { () throws -> Void in
            let large = try TestMedia.make("browser-640", seconds: 20, size: "640x360")
            let small = try TestMedia.make("browser-320", seconds: 20, size: "320x180")
            for scheme in ["cenc", "cbcs"] {
                try PlayCommandTests.package(large, small, into: site.appendingPathComponent("movie-\(scheme)"), format: "cmaf", scheme: scheme,
                                             asset: "movie-\(scheme)", server: server,
                                             drm: "clearkey,playready,widevine" + (scheme == "cbcs" ? ",fairplay" : ""))
            }
        }
        server.serveArguments = ["--origin", site.path]
        try await server.start()
        return server
    }

    /// What the page shows and the video does, read in the browser.
    struct Reading {
        var time: Double, frames: Int, audioBytes: Int, width: Int, state: String, mediaError: Bool, errors: [[String: Any]], expiry: String,
            errorText: String
    }

    static func read(_ browser: WebDriver) async throws -> Reading {
        let value = try await browser.execute("""
            const v = document.querySelector("video");
            return { time: v.currentTime, frames: v.getVideoPlaybackQuality().totalVideoFrames, audioBytes: v.webkitAudioDecodedByteCount, width: v.videoWidth,
                     state: document.body.dataset.state, mediaError: v.error !== null, errors: window.satchel ? window.satchel.errors : [],
                     expiry: document.getElementById("expiry").textContent, errorText: document.getElementById("error").hidden ? "" : document.getElementById("error").textContent };
            """) as? [String: Any] ?? [:]
        return Reading(time: value["time"] as? Double ?? Double(value["time"] as? Int ?? -1), frames: value["frames"] as? Int ?? -1,
                       audioBytes: value["audioBytes"] as? Int ?? -1,
                       width: value["width"] as? Int ?? -1, state: value["state"] as? String ?? "", mediaError: value["mediaError"] as? Bool ?? true,
                       errors: value["errors"] as? [[String: Any]] ?? [], expiry: value["expiry"] as? String ?? "",
                       errorText: value["errorText"] as? String ?? "")
    }

    @Test("multi-DRM cenc and cbcs play in Chromium with Clear Key: past 5 s, video frames and audio decoded, no MediaError, the license's expiry shown, a seek to the middle plays on, the quality switch plays the other rendition",
          arguments: ["cenc", "cbcs"])
    func plays(scheme: String) async throws {
        let server = try await Self.world("browser-\(scheme)")
        defer { server.stop() }
        let asset = "movie-\(scheme)"
        let token = try await server.token(persistent: false, asset: asset)
        let browser = try await WebDriver.start()
        do {
            try await browser.open("\(server.url)/play/\(asset)#token=\(token)")
            let passed = try await browser.wait(60, until: "return document.querySelector('video').currentTime > 5 && document.body.dataset.state === 'playing'")
            var reading = try await Self.read(browser)
            #expect(passed, "currentTime \(reading.time), state \(reading.state), errors \(reading.errors)")
            #expect(!reading.mediaError && reading.errors.isEmpty, "\(reading.errors) \(reading.state)")
            #expect(reading.width == 640, "the highest rendition plays first")
            #expect(reading.expiry.hasPrefix("Valid until"), "\(reading.expiry)")
            let expires = try await browser.execute("return document.getElementById('expiry').dataset.expires") as? String ?? ""
            let expiry = try #require(ISO8601DateFormatter.withFractions.date(from: expires), "\(expires)")
            let claimed = Self.expiry(of: token)  // (not inside #require: a failure would print the token)
            let tokenExpiry = try #require(claimed, "the token has a whole-second exp")
            #expect(abs(expiry.timeIntervalSince(tokenExpiry)) < 1, "the token's exp (600 s, sooner than the lease): \(expiry), token \(tokenExpiry)")
            // The dashboard's convention: 24-hour UTC with the zone said, whatever the browser's locale.
            let shown = String(ISO8601DateFormatter().string(from: expiry).prefix(19)).replacingOccurrences(of: "T", with: " ") + " UTC"
            #expect(reading.expiry.hasPrefix("Valid until \(shown) ("), "\(reading.expiry)")
            #expect(try await browser.execute("return location.hash") as? String == "", "the token leaves the address bar")
            let frames = reading.frames
            let more = try await browser.wait(20, until: "return document.querySelector('video').getVideoPlaybackQuality().totalVideoFrames > \(frames)")
            reading = try await Self.read(browser)
            #expect(more, "frames keep being decoded: \(frames) → \(reading.frames)")
            #expect(reading.audioBytes > 0, "the audio is decrypted and decoded too: \(reading.audioBytes) bytes")
            try await browser.screenshot("player-\(scheme)-playing")

            // A seek to the middle plays on from there. (A loaded machine may have played the 20 s to their end by now:
            // an ended video stays paused after a seek, as a user's player would until play is pressed.)
            try await browser.execute("const v = document.querySelector('video'); v.currentTime = 10; v.play().catch(() => {})")
            let seeked = try await browser.wait(45, until: "const v = document.querySelector('video'); return v.currentTime > 11.5 && !v.paused")
            reading = try await Self.read(browser)
            #expect(seeked && !reading.mediaError && reading.errors.isEmpty, "after the seek: \(reading.time) \(reading.state) \(reading.errors)")
            try await browser.screenshot("player-\(scheme)-seeked")

            // The quality switch: the 320×180 rendition plays (the decoder's frame size says which one). It takes
            // effect at the next segment, so the playhead goes back near the start first: on a loaded machine the
            // seek above may have played on into the last segment, where no switch can show before the end.
            try await browser.execute("const v = document.querySelector('video'); v.currentTime = 2; v.play().catch(() => {})")
            let rewound = try await browser.wait(45, until: "const v = document.querySelector('video'); return v.currentTime > 2.5 && v.currentTime < 10 && !v.paused")
            #expect(rewound, "back near the start before the switch")
            try await browser.execute("""
                const select = document.getElementById("quality");
                select.value = [...select.options].find((option) => option.textContent.startsWith("320×180")).value;
                select.dispatchEvent(new Event("change"));
                """)
            // Playing again at 320 (a loaded machine may show the state it passes through, buffering, for a moment).
            let switched = try await browser.wait(45, until: "return document.querySelector('video').videoWidth === 320 && document.body.dataset.state === 'playing'")
            reading = try await Self.read(browser)
            // `switched` saw it playing at 320; the reading after may catch a moment's buffering, which is no error.
            #expect(switched && !reading.mediaError && reading.errors.isEmpty, "\(reading.width) \(reading.state) \(reading.errors)")
            try await browser.screenshot("player-\(scheme)-switched")
        } catch {
            _ = try? await browser.screenshot("player-\(scheme)-failed")
            await browser.quit()
            throw error
        }
        await browser.quit()
    }

    /// A JWT's `exp` claim.
    static func expiry(of token: String) -> Date? {
        let parts = token.split(separator: ".")
        guard parts.count == 3 else { return nil }
        var payload = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        payload += String(repeating: "=", count: (4 - payload.count % 4) % 4)
        guard let data = Data(base64Encoded: payload), let claims = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let exp = claims["exp"] as? Int else { return nil }  // whole seconds, as issuers write them
        return Date(timeIntervalSince1970: Double(exp))
    }

    @Test("a token for another asset, an expired token and no token are refused in plain words, and nothing plays")
    func refusals() async throws {
        let server = try await Self.world("browser-refusals")
        defer { server.stop() }
        let other = try await server.token(persistent: false, asset: "movie-cenc")
        let expired = try await AgentCommandTests.satchel(["token", "--jwks", server.jwks.path, "--kid", "backend", "--sub", "user-42",
                                                     "--asset", "movie-cbcs", "--ttl", "60"], faketime: "-1h").stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let browser = try await WebDriver.start()
        do {
            for (label, fragment, type, words) in [("other-asset", "#token=\(other)", "not-entitled", "issued for another asset"),
                                                   ("expired", "#token=\(expired)", "invalid-entitlement", "has expired"),
                                                   ("no-token", "", "missing-entitlement", "No entitlement token")] {
                try await browser.open("about:blank")  // a new fragment alone would not load the page again
                try await browser.open("\(server.url)/play/movie-cbcs\(fragment)")
                let refused = try await browser.wait(20, until: "return document.body.dataset.state === 'error'")
                try await Task.sleep(for: .seconds(2))
                let reading = try await Self.read(browser)
                #expect(refused && reading.errors.first?["type"] as? String == type, "\(label): \(reading.errors)")
                #expect(reading.errorText.contains(words), "\(label): \(reading.errorText)")
                #expect(reading.time == 0 && reading.frames == 0 && reading.audioBytes <= 0,
                        "\(label): nothing plays (\(reading.time) s, \(reading.frames) frames, \(reading.audioBytes) audio bytes)")
                #expect(reading.expiry == "—", "\(label): no license, no expiry")
                try await browser.screenshot("player-refused-\(label)")
            }
        } catch {
            await browser.quit()
            throw error
        }
        await browser.quit()
    }
}

extension ISO8601DateFormatter {
    /// Dates as JavaScript's `toISOString()` writes them (with milliseconds).
    static var withFractions: ISO8601DateFormatter {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter
    }
}

/// The player's modules, tested on their own in Chromium (the MPD reader and the `pssh` key ID reader), and the
/// pages and files the server gives for it.
@Suite(.serialized) struct PlayerModuleTests {
    @Test("the page: 200 with its security headers for a published package, a notice (404) for none and without an origin, 400 for what is no asset ID; the modules with ETag and 304; nothing else under /player/")
    func pages() async throws {
        let server = try await AgentCommandTests.Server("player-pages")
        let site = server.directory.appendingPathComponent("site")
        try FileManager.default.createDirectory(at: site.appendingPathComponent("film"), withIntermediateDirectories: true)
        try Data("<MPD/>".utf8).write(to: site.appendingPathComponent("film/manifest.mpd"))
        server.serveArguments = ["--origin", site.path]
        try await server.start()
        try await TestMedia.offloaded { () throws -> Void in
            let page = try OriginCommandTests.request(server.url + "/play/film")
            let html = String(decoding: page.body, as: UTF8.self)
            #expect(page.status == 200 && page.headers["content-type"] == "text/html; charset=utf-8")
            #expect(page.headers["content-security-policy"]?.contains("script-src 'self'") == true
                    && page.headers["content-security-policy"]?.contains("media-src 'self' blob:") == true
                    && page.headers["x-content-type-options"] == "nosniff" && page.headers["referrer-policy"] == "no-referrer")
            #expect(html.contains(#"data-manifest="/content/film/manifest.mpd""#) && html.contains(#"src="/player/page.js""#))
            #expect(!html.contains("data-token-endpoint"), "no demo: the page asks for no token endpoint")
            for (path, status, words) in [("/play/nothing", 404, "No CMAF package of nothing"), ("/play/%3Cscript%3E", 400, "Not an asset ID"),
                                          ("/play/.hidden", 400, "Not an asset ID")] {
                // A browser (asking for HTML) gets a page; any other client the same refusal as problem+json.
                let notice = try OriginCommandTests.request(server.url + path, headers: ["Accept: text/html,application/xhtml+xml,*/*;q=0.8"])
                let text = String(decoding: notice.body, as: UTF8.self)
                #expect(notice.status == status && text.contains(words) && !text.contains("<script>"), "\(path): \(notice.status) \(text)")
                #expect(notice.headers["content-security-policy"] != nil && notice.headers["content-type"] == "text/html; charset=utf-8", "\(path)")
                let problem = try OriginCommandTests.request(server.url + path)
                let document = String(decoding: problem.body, as: UTF8.self)
                #expect(problem.status == status && problem.headers["content-type"] == "application/problem+json"
                        && document.contains(#""status":\#(status)"#) && document.contains(words.replacingOccurrences(of: "Not an asset ID", with: "An asset ID is")),
                        "\(path): \(problem.status) \(document)")
            }
            let module = try OriginCommandTests.request(server.url + "/player/player.js")
            let etag = try #require(module.headers["etag"])
            #expect(module.status == 200 && module.headers["content-type"] == "text/javascript; charset=utf-8" && module.body.count > 1000)
            #expect(try OriginCommandTests.request(server.url + "/player/player.js", headers: ["If-None-Match: \(etag)"]).status == 304)
            for path in ["/player/nothing.js", "/player/..%2FPlayerRoutes.swift", "/player/", "/player/../templates/play.mustache"] {
                let refused = try OriginCommandTests.request(server.url + path)
                #expect(refused.status == 404, "\(path): \(refused.status)")
            }
        }
        server.stop()
        server.serveArguments = []
        try await server.start()
        defer { server.stop() }
        let without = try await TestMedia.offloaded { try OriginCommandTests.request(server.url + "/play/film", headers: ["Accept: text/html"]) }
        #expect(without.status == 404 && String(decoding: without.body, as: UTF8.self).contains("publishes no packages"))
    }

    /// Runs `body` (an async function body with `mpd` and `clearkey` imported) in a page of `server`; returns its result.
    static func run(_ browser: WebDriver, _ body: String) async throws -> Any? {
        try await browser.executeAsync("""
            const done = arguments[arguments.length - 1];
            Promise.all([import("/player/mpd.js"), import("/player/clearkey.js")]).then(async ([mpd, clearkey]) => { \(body) })
              .then(done, (error) => done({ thrown: String(error && error.message || error) }));
            """)
    }

    @Test("parseMPD: SegmentTimeline with repeats and $Time$, @duration with $Number%05d$, BaseURL at every level, templates on the AdaptationSet; refusals with an MPDError, quickly, for live, no Period, no template, a huge r and non-XML; pssh key IDs")
    func modules() async throws {
        let server = try await AgentCommandTests.Server("player-modules")
        let site = server.directory.appendingPathComponent("site")
        try FileManager.default.createDirectory(at: site, withIntermediateDirectories: true)
        server.serveArguments = ["--origin", site.path]
        try await server.start()
        defer { server.stop() }
        let browser = try await WebDriver.start()
        do {
            try await browser.open(server.url + "/player/player.css")  // any page of the server: the modules load from it
            let timeline = try await Self.run(browser, #"""
                const text = `<?xml version="1.0"?><MPD xmlns="urn:mpeg:dash:schema:mpd:2011" xmlns:cenc="urn:mpeg:cenc:2013" type="static" mediaPresentationDuration="PT8S">
                  <BaseURL>https://cdn.example/a/</BaseURL>
                  <Period><AdaptationSet contentType="video" mimeType="video/mp4">
                    <ContentProtection schemeIdUri="urn:mpeg:dash:mp4protection:2011" value="cbcs" cenc:default_KID="0123abcd-0123-abcd-0123-abcd0123abcd"/>
                    <SegmentTemplate timescale="1000" initialization="$RepresentationID$/init.mp4" media="$RepresentationID$/$Time$.m4s">
                      <SegmentTimeline><S t="500" d="2000" r="2"/><S d="1500"/></SegmentTimeline></SegmentTemplate>
                    <Representation id="hi" bandwidth="900000" codecs="avc1.64001f" width="1280" height="720"/>
                    <Representation id="lo" bandwidth="300000" codecs="avc1.64000d" width="480" height="270"><BaseURL>low/</BaseURL></Representation>
                  </AdaptationSet></Period></MPD>`;
                const m = mpd.parseMPD(text, "https://origin.example/pkg/manifest.mpd");
                return { duration: m.duration, scheme: m.scheme, keyIDs: m.keyIDs, ids: m.video.map((r) => r.id),
                         init: m.video[0].initURL, urls: m.video[0].segments.map((s) => s.url), starts: m.video[0].segments.map((s) => s.start),
                         ends: m.video[0].segments.map((s) => s.end), low: m.video[1].segments[0].url, audio: m.audio.length };
                """#) as? [String: Any]
            #expect(timeline?["duration"] as? Int == 8 && timeline?["scheme"] as? String == "cbcs", "\(String(describing: timeline))")
            #expect(timeline?["keyIDs"] as? [String] == ["0123abcd0123abcd0123abcd0123abcd"])
            #expect(timeline?["ids"] as? [String] == ["hi", "lo"] && timeline?["init"] as? String == "https://cdn.example/a/hi/init.mp4")
            #expect(timeline?["urls"] as? [String] == ["500", "2500", "4500", "6500"].map { "https://cdn.example/a/hi/\($0).m4s" })
            #expect((timeline?["starts"] as? [Double]) == [0.5, 2.5, 4.5, 6.5] && (timeline?["ends"] as? [Double]) == [2.5, 4.5, 6.5, 8])
            #expect(timeline?["low"] as? String == "https://cdn.example/a/low/lo/500.m4s", "\(String(describing: timeline?["low"]))")

            let numbered = try await Self.run(browser, #"""
                const text = `<MPD type="static" mediaPresentationDuration="PT1M0.5S"><Period>
                  <AdaptationSet mimeType="audio/mp4" codecs="mp4a.40.2"><Representation id="a" bandwidth="64000">
                    <SegmentTemplate timescale="48000" duration="96000" startNumber="7" media="seg-$Number%05d$-$Bandwidth$.m4s" initialization="init-$$.mp4"/>
                  </Representation></AdaptationSet>
                  <AdaptationSet contentType="text" mimeType="application/mp4"><Representation id="t" codecs="stpp"/></AdaptationSet></Period></MPD>`;
                const m = mpd.parseMPD(text, "http://h.example/x/manifest.mpd");
                const segments = m.audio[0].segments;
                return { count: segments.length, first: segments[0].url, last: segments.at(-1).url, lastEnd: segments.at(-1).end,
                         init: m.audio[0].initURL, video: m.video.length, scheme: m.scheme,
                         durations: [mpd.parseDuration("PT1H2M3.5S"), mpd.parseDuration("P1DT1S"), mpd.parseDuration("PT"), mpd.parseDuration("1S")] };
                """#) as? [String: Any]
            #expect(numbered?["count"] as? Int == 31 && numbered?["first"] as? String == "http://h.example/x/seg-00007-64000.m4s", "\(String(describing: numbered))")
            #expect(numbered?["last"] as? String == "http://h.example/x/seg-00037-64000.m4s" && numbered?["init"] as? String == "http://h.example/x/init-$.mp4")
            #expect((numbered?["lastEnd"] as? Double) == 60.5 && numbered?["video"] as? Int == 0 && numbered?["scheme"] is NSNull)
            #expect((numbered?["durations"] as? [Any])?.count == 4)
            let durations = numbered?["durations"] as? [Any] ?? []
            #expect(durations.first as? Double == 3723.5 && durations.dropFirst().first as? Int == 86_401 && durations.dropFirst(2).allSatisfy { $0 is NSNull })

            // Refusals: each an MPDError with its reason, and none takes long (a huge r is refused, not looped over).
            let refusals = try await Self.run(browser, #"""
                const cases = {
                  live: `<MPD type="dynamic"><Period/></MPD>`,
                  noPeriod: `<MPD type="static"/>`,
                  noTemplate: `<MPD><Period><AdaptationSet mimeType="video/mp4" codecs="avc1"><Representation id="v"/></AdaptationSet></Period></MPD>`,
                  hugeRepeat: `<MPD><Period><AdaptationSet mimeType="video/mp4" codecs="avc1"><Representation id="v"><SegmentTemplate media="$Number$"><SegmentTimeline><S d="1" r="1000000000000"/></SegmentTimeline></SegmentTemplate></Representation></AdaptationSet></Period></MPD>`,
                  hugeDuration: `<MPD mediaPresentationDuration="PT100000000S"><Period><AdaptationSet mimeType="video/mp4" codecs="avc1"><Representation id="v"><SegmentTemplate media="$Number$" duration="1"/></Representation></AdaptationSet></Period></MPD>`,
                  negative: `<MPD><Period><AdaptationSet mimeType="video/mp4" codecs="avc1"><Representation id="v" bandwidth="-5"><SegmentTemplate media="$Number$" duration="1"/></Representation></AdaptationSet></Period></MPD>`,
                  notXML: `#EXTM3U`,
                };
                const out = {};
                for (const [name, text] of Object.entries(cases)) {
                  const started = performance.now();
                  try { mpd.parseMPD(text, "http://h.example/m.mpd"); out[name] = "accepted"; }
                  catch (error) { out[name] = `${error.name}: ${error.message} (${Math.round(performance.now() - started)} ms)`; }
                }
                return out;
                """#) as? [String: String] ?? [:]
            for (name, words) in [("live", "dynamic"), ("noPeriod", "no Period"), ("noTemplate", "no SegmentTemplate"), ("hugeRepeat", "more than"),
                                  ("hugeDuration", "more than"), ("negative", "not a non-negative number"), ("notXML", "not an MPD")] {
                let answer = refusals[name] ?? "missing"
                #expect(answer.hasPrefix("MPDError: ") && answer.contains(words), "\(name): \(answer)")
                let milliseconds = Int(answer.split(separator: "(").last?.split(separator: " ").first ?? "") ?? .max
                #expect(milliseconds < 1000, "\(name) is refused quickly: \(answer)")
            }

            // The key IDs of cenc initialization data: the common system's version-1 pssh boxes name them; version 0,
            // another system's box (Widevine's, listing a key ID of its own here) and cut boxes add none.
            let kids = try await Self.run(browser, #"""
                const common = [0x10, 0x77, 0xef, 0xec, 0xc0, 0xb2, 0x4d, 0x02, 0xac, 0xe3, 0x3c, 0x1e, 0x52, 0xe2, 0xfb, 0x4b];
                const widevine = [0xed, 0xef, 0x8b, 0xa9, 0x79, 0xd6, 0x4a, 0xce, 0xa3, 0xc8, 0x27, 0xdc, 0xd5, 0x1d, 0x21, 0xed];
                const box = (version, kids, system = common) => {
                  const size = 32 + (version ? 4 + kids.length * 16 : 0) + 4;
                  const bytes = new Uint8Array(size); const view = new DataView(bytes.buffer);
                  view.setUint32(0, size); bytes.set([0x70, 0x73, 0x73, 0x68], 4); bytes[8] = version; bytes.set(system, 12);
                  let offset = 28;
                  if (version) { view.setUint32(28, kids.length); offset = 32; kids.forEach((kid) => { bytes.set(kid, offset); offset += 16; }); }
                  return bytes;
                };
                const a = new Uint8Array(16).fill(0xaa), b = new Uint8Array(16).map((_, i) => i), c = new Uint8Array(16).fill(0xcc);
                const joined = new Uint8Array([...box(1, [a, b]), ...box(0, []), ...box(1, [c], widevine), ...box(1, [a])]);
                return { both: clearkey.keyIDsOfPSSH(joined.buffer), cut: clearkey.keyIDsOfPSSH(joined.slice(0, 40).buffer),
                         words: clearkey.LicenseError.plainWords("not-entitled") };
                """#) as? [String: Any]
            #expect(kids?["both"] as? [String] == [String(repeating: "aa", count: 16), "000102030405060708090a0b0c0d0e0f"], "\(String(describing: kids))")
            #expect(kids?["cut"] as? [String] == [] && (kids?["words"] as? String)?.contains("another asset") == true)
        } catch {
            await browser.quit()
            throw error
        }
        await browser.quit()
    }
}
