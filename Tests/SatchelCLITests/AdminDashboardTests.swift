import Foundation
import SatchelTestSupport
import Testing

/// The operator dashboard (`/admin`) of a real `satchel serve`, in headless Chromium and over raw HTTP: the login,
/// every page with the rows of a seeded database, actions that take effect (a device disabled, an asset deleted),
/// and forms refused without the session cookie or with a wrong CSRF token. Screenshots in the test artifacts.
@Suite(.serialized) struct AdminDashboardTests {
    static let operatorKey = "operator-key-of-the-admin-test-0123456789"

    /// A server with the agent tests' three assets, a registered device "laptop" holding a persistent license of
    /// "movie" and one of "clip", and a Clear Key license of "online"; the dashboard signs in with ``operatorKey``.
    static func world() async throws -> (server: AgentCommandTests.Server, device: String) {
        let server = try await AgentCommandTests.Server("admin")
        let keyFile = server.directory.appendingPathComponent("operator.key")
        try Self.operatorKey.write(to: keyFile, atomically: true, encoding: .utf8)
        server.serveArguments = ["--operator-key-file", keyFile.path]
        try await server.start()
        let device = server.directory.appendingPathComponent("device").path
        let token = try await server.token()
        try await TestMedia.offloaded {
            let registered = try AgentCommandTests.satchel(["agent", "register", "--server", server.url, "--token", token, "--data-dir", device, "--name", "laptop"])
            #expect(registered.status == 0, "\(registered.stderr)")
            for (asset, more) in [("movie", ["--persistent"]), ("clip", [])] {
                let acquired = try AgentCommandTests.satchel(["license", "acquire", asset, "--server", server.url, "--token", token, "--data-dir", device] + more)
                #expect(acquired.status == 0, "\(acquired.stderr)")
            }
            let clear = try CLIRunner.run(["license", "request", "clearkey", "--url", server.url + "/clearkey/license",
                                           "--kid", "20112233445566778899aabbccddeeff", "--token", token])
            #expect(clear.status == 0, "\(clear.stderr)")
        }
        return (server, device)
    }

    /// Signs in through the login form.
    static func signIn(_ browser: WebDriver, _ base: String, key: String = operatorKey) async throws {
        try await browser.open(base + "/admin/login")
        try await browser.execute("document.getElementById('key').value = arguments[0]; document.querySelector('form').requestSubmit()", [key])
        _ = try await browser.wait(10, until: "return document.readyState === 'complete' && !location.pathname.endsWith('/login') || document.querySelector('.error') !== null")
    }

    static func text(_ browser: WebDriver) async throws -> String {
        try await browser.execute("return document.documentElement.outerHTML") as? String ?? ""
    }

    @Test("sign in, every page shows the seeded rows (never a key), the licenses filter, disabling a device refuses its next license, deleting an asset stops its licenses; screenshots of each page")
    func pages() async throws {
        let (server, device) = try await Self.world()
        defer { server.stop() }
        let browser = try await WebDriver.start(width: 1360, height: 1000)
        do {
            // Not signed in: every page sends the browser to the login form; a wrong key is refused there.
            try await browser.open(server.url + "/admin/devices")
            #expect(try await browser.execute("return location.pathname") as? String == "/admin/login")
            try await Self.signIn(browser, server.url, key: "not-the-operator-key-at-all")
            #expect(try await browser.execute("return document.querySelector('.error')?.textContent") as? String == "That is not the operator key.")
            try await browser.screenshot("admin-login-refused")
            try await Self.signIn(browser, server.url)
            #expect(try await browser.execute("return location.pathname") as? String == "/admin", "signed in, on the overview")
            #expect(try await browser.execute("return document.cookie") as? String == "", "the session cookie is HttpOnly")

            // The overview: counts and both charts.
            let stats = try await browser.execute("return [...document.querySelectorAll('.stat .value')].map(e => e.textContent)") as? [String] ?? []
            #expect(stats == ["3", "3", "1", "2"], "assets, licenses in 24 h, devices, active device licenses: \(stats)")
            let bars = try await browser.execute("return [...document.querySelectorAll('svg.chart')].map(svg => svg.querySelectorAll('rect:not(.hit)').length)") as? [Int] ?? []
            #expect(bars.count == 2 && bars[0] >= 2 && bars[1] >= 1, "Clear Key and Satchel bars, one offline bar: \(bars)")
            let recent = try await browser.execute("return document.querySelectorAll('main table tbody tr').length") as? Int
            #expect(recent == 3)
            try await browser.screenshot("admin-overview")

            // Assets: three, with key IDs and policies, never a key.
            try await browser.open(server.url + "/admin/assets")
            let assets = try await browser.execute("return [...document.querySelectorAll('tr[data-asset]')].map(r => r.dataset.asset)") as? [String]
            #expect(assets == ["clip", "movie", "online"])
            var page = try await Self.text(browser)
            #expect(page.contains("7c3e9a14b2d05f6e8a1c4d7b2e9f0a63") && page.contains("rental 1 h") && page.contains("online only"))
            #expect(!page.contains(server.contentKey) && !page.contains("b0b1b2b3b4b5b6b7b8b9babbbcbdbebf"), "no content key on the page")
            try await browser.screenshot("admin-assets")

            // Licenses, then filtered by asset.
            try await browser.open(server.url + "/admin/licenses")
            #expect(try await browser.execute("return document.querySelectorAll('main table tbody tr').length") as? Int == 3)
            try await browser.screenshot("admin-licenses")
            try await browser.execute("document.querySelector('input[name=asset]').value = 'movie'; document.querySelector('form.filters').requestSubmit()")
            _ = try await browser.wait(10, until: "return location.search.includes('asset=movie')")
            let filtered = try await browser.execute("return [...document.querySelectorAll('main table tbody tr td:nth-child(2)')].map(e => e.textContent)") as? [String]
            #expect(filtered == ["movie"], "\(String(describing: filtered))")

            // Devices: disable "laptop"; its next license is refused, and enabled again it gets one.
            try await browser.open(server.url + "/admin/devices")
            page = try await Self.text(browser)
            #expect(page.contains("laptop") && page.contains("2 issued") && page.contains("1 offline"))
            try await browser.screenshot("admin-devices")
            try await browser.execute("document.querySelector('tr[data-device] button.danger').click()")
            _ = try await browser.wait(10, until: "return document.querySelector('tr[data-device] .tag.bad') !== null")
            try await browser.screenshot("admin-devices-disabled")
            let token = try await server.token()
            let refused = try await TestMedia.offloaded {
                try AgentCommandTests.satchel(["license", "acquire", "clip", "--server", server.url, "--token", token, "--data-dir", device])
            }
            #expect(refused.status != 0 && refused.stderr.contains("device-disabled"), "\(refused.stderr)")
            try await browser.execute("document.querySelector('tr[data-device] form button').click()")
            _ = try await browser.wait(10, until: "return document.querySelector('tr[data-device] .tag.good') !== null")
            let accepted = try await TestMedia.offloaded {
                try AgentCommandTests.satchel(["license", "acquire", "clip", "--server", server.url, "--token", token, "--data-dir", device])
            }
            #expect(accepted.status == 0, "enabled again: \(accepted.stderr)")

            // Events: the registration and the licenses.
            try await browser.open(server.url + "/admin/events")
            page = try await Self.text(browser)
            #expect(page.contains("device laptop registered") && page.contains("clearkey-temporary license for online"))
            try await browser.screenshot("admin-events")

            // 100 more licenses: the audit is paged (100 a page, newest first), the older ones a link away, the filter kept.
            let bearer = try await server.token()
            let issued = try await TestMedia.offloaded {
                try TestMedia.run("python3", ["-c", """
                    import json, sys, urllib.request
                    for _ in range(100):
                        body = json.dumps({"kids": ["IBEiM0RVZneImaq7zN3u_w"], "type": "temporary"}).encode()
                        urllib.request.urlopen(urllib.request.Request(sys.argv[1], data=body, headers={"Authorization": "Bearer " + sys.argv[2]})).read()
                    print("issued")
                    """, server.url + "/clearkey/license", bearer])
            }
            #expect(issued.contains("issued"))
            try await browser.open(server.url + "/admin/licenses?type=clearkey-temporary")
            #expect(try await browser.execute("return document.querySelectorAll('main table tbody tr').length") as? Int == 100)
            try await browser.execute("[...document.querySelectorAll('nav.pager a')].find(a => a.textContent.includes('Older')).click()")
            _ = try await browser.wait(10, until: "return location.search.includes('after=')")
            #expect(try await browser.execute("return new URLSearchParams(location.search).get('type')") as? String == "clearkey-temporary", "the filter is kept")
            let older = try await browser.execute("return [...document.querySelectorAll('main table tbody tr')].map(e => e.textContent)") as? [String]
            #expect(older?.count == 1 && older?.first?.contains("clearkey-temporary") == true, "the first Clear Key license, alone on the second page: \(String(describing: older))")
            #expect(try await browser.execute("return [...document.querySelectorAll('nav.pager a')].map(a => a.textContent).join('|')") as? String == "« Newest")
            try await browser.screenshot("admin-licenses-older")

            // Delete "online" (confirmed in the dialog): gone from the page, and its keys are no longer given.
            try await browser.open(server.url + "/admin/assets")
            try await browser.execute("setTimeout(() => document.querySelector('tr[data-asset=online] button.danger').click(), 0)")
            try await Task.sleep(for: .milliseconds(300))
            #expect(try await browser.acceptAlert().contains("Delete online"))
            _ = try await browser.wait(10, until: "return location.search.includes('deleted=online')")
            let left = try await browser.execute("return [...document.querySelectorAll('tr[data-asset]')].map(r => r.dataset.asset)") as? [String]
            #expect(left == ["clip", "movie"])
            #expect((try await browser.execute("return document.querySelector('.flash')?.textContent") as? String ?? "").contains("Deleted online"))
            try await browser.screenshot("admin-asset-deleted")
            let gone = try await TestMedia.offloaded {
                try CLIRunner.run(["license", "request", "clearkey", "--url", server.url + "/clearkey/license",
                                   "--kid", "20112233445566778899aabbccddeeff", "--token", token])
            }
            #expect(gone.status != 0, "no key for a deleted asset: \(gone.stdout)")
        } catch {
            _ = try? await browser.screenshot("admin-failed")
            await browser.quit()
            throw error
        }
        await browser.quit()
    }

    @Test("the devices page with the backplane: the user's download limit, downloads allowed and the last sync; Stop downloads, Delete asset, Wipe and Kill (confirmed) send their commands, which the device's next sync applies in order; screenshots")
    func backplaneActions() async throws {
        let (server, device) = try await Self.world()
        defer { server.stop() }
        let key = server.directory.appendingPathComponent("operator.key").path
        await #expect(try CLIRunner.run(["backplane", "limits", "set", "--max-devices", "2", "--server", server.url, "--operator-key-file", key]).status == 0)
        await #expect(try CLIRunner.run(["agent", "sync", "--data-dir", device]).status == 0)
        let browser = try await WebDriver.start()
        do {
            try await Self.signIn(browser, server.url)
            try await browser.open(server.url + "/admin/devices")
            var page = try await Self.text(browser)
            #expect(page.contains("at most 2 download-enabled device(s) per user") && page.contains("limit 2") && page.contains(">allowed<"), "\(page.suffix(3000))")
            #expect(!page.contains("synced never"), "the sync is shown")
            try await browser.screenshot("admin-devices-backplane")
            func click(_ label: String) async throws {
                let script = "[...document.querySelectorAll('tr[data-device] button')].find(b => b.textContent.trim() === arguments[0]).click()"
                try await browser.execute(script, [label])
                _ = try await browser.wait(10, until: "return document.readyState === 'complete' && location.pathname === '/admin/devices'")
            }
            try await click("Stop downloads")
            _ = try await browser.wait(10, until: "return document.body.textContent.includes('Allow downloads')")
            try await browser.execute("document.querySelector('tr[data-device] input[name=asset]').value = 'movie'")
            try await click("Delete asset")
            try await browser.execute("setTimeout(() => [...document.querySelectorAll('tr[data-device] button')].find(b => b.textContent.trim() === 'Wipe').click(), 0)")
            try await Task.sleep(for: .milliseconds(300))
            #expect(try await browser.acceptAlert().contains("Wipe every download and license on laptop"))
            _ = try await browser.wait(10, until: "return document.readyState === 'complete'")
            let synced = try await TestMedia.offloaded { try CLIRunner.run(["agent", "sync", "--data-dir", device]) }
            #expect(synced.stdout.split(separator: "\n").prefix(3) == ["applied 1: download-enabled false", "applied 2: delete-asset movie", "applied 3: wipe"],
                    "\(synced.stdout) \(synced.stderr)")
            try await browser.open(server.url + "/admin/devices")
            try await browser.execute("setTimeout(() => [...document.querySelectorAll('tr[data-device] button')].find(b => b.textContent.trim() === 'Kill').click(), 0)")
            try await Task.sleep(for: .milliseconds(300))
            _ = try await browser.acceptAlert()
            _ = try await browser.wait(10, until: "return document.body.textContent.includes('killed')")
            page = try await Self.text(browser)
            #expect(page.contains(">killed<") && !page.contains(">Wipe<") && !page.contains(">Enable<"), "a killed device has no more buttons")
            let csrf = try await browser.execute("return document.querySelector('input[name=csrf]')?.value ?? ''") as? String ?? ""
            let enabled = try await browser.executeAsync("""
                const done = arguments[arguments.length - 1];
                fetch('/admin/devices/' + document.querySelector('tr[data-device]').dataset.device + '/enable',
                      { method: 'POST', body: new URLSearchParams({ csrf: arguments[0] }), redirect: 'manual' }).then(r => done(r.status));
                """, [csrf]) as? Int
            #expect(enabled == 403, "a killed device's licenses are not enabled again: \(String(describing: enabled))")
            try await browser.screenshot("admin-devices-killed")
        } catch {
            _ = try? await browser.screenshot("admin-backplane-failed")
            await browser.quit()
            throw error
        }
        await browser.quit()
    }

    @Test("the activity page draws what devices reported (downloads completed and failed per hour, plays, top assets, errors by reason, users) and a user's page their devices' downloads, plays and licenses; screenshots")
    func activity() async throws {
        let (server, device) = try await Self.world()
        defer { server.stop() }
        let site = server.directory.appendingPathComponent("site")
        try FileManager.default.createDirectory(at: site, withIntermediateDirectories: true)
        let clip = try await TestMedia.offloaded { try TestMedia.make("activity-clip", seconds: 2) }
        for name in ["clip.mp4", "gone.mp4"] { try FileManager.default.copyItem(at: clip, to: site.appendingPathComponent(name)) }
        let origin = try await TestOrigin.start(root: site)
        defer { origin.stop() }
        try await TestMedia.offloaded {
            for (id, file) in [("film", "clip.mp4"), ("gone", "gone.mp4")] {
                #expect(try CLIRunner.run(["download", "add", origin.url(file), "--id", id, "--data-dir", device]).status == 0)
            }
            try FileManager.default.removeItem(at: site.appendingPathComponent("gone.mp4"))  // its download fails: 404
            _ = try CLIRunner.run(["download", "run", "--data-dir", device, "--retry-delay", "0"])
            let player = try LineReader(["play", "film", "--data-dir", device])
            #expect(player.wait(for: "http://127.0.0.1:", seconds: 30))
            player.stop()
            #expect(try CLIRunner.run(["agent", "sync", "--data-dir", device]).status == 0)
        }
        let browser = try await WebDriver.start()
        do {
            try await Self.signIn(browser, server.url)
            try await browser.open(server.url + "/admin/activity")
            var page = try await Self.text(browser)
            #expect(page.contains("aria-label=\"Downloads completed and failed per hour, last 24 hours\"") && page.contains("aria-label=\"Plays per hour, last 24 hours\""))
            #expect(page.contains("1 completed") && page.contains("failed"), "the bars' tooltips count them: \(page.suffix(4000))")
            let cells = "return [...document.querySelectorAll('tbody tr')].map(r => [...r.cells].map(c => c.textContent.trim()).join('|'))"
            var rows = try await browser.execute(cells) as? [String] ?? []
            #expect(rows.contains("film|1|1"), "film: one play, one download: \(rows)")
            #expect(page.contains("<code>http-status</code>"), "the failure's reason")
            #expect(page.contains("href=\"/admin/users/user-42\""))
            try await browser.screenshot("admin-activity")
            try await browser.open(server.url + "/admin/users/user-42")
            page = try await Self.text(browser)
            #expect(page.contains("<strong>laptop</strong>"), "the user's device")
            rows = try await browser.execute(cells) as? [String] ?? []
            let laptop = rows.first { $0.hasPrefix("laptop") }?.split(separator: "|").map(String.init) ?? []
            #expect(laptop.count == 8 && laptop[2] == "1" && Int(laptop[3]) ?? 0 >= 3 && laptop[4] == "1" && laptop[5] == "2",
                    "laptop: 1 download, its failed attempts (three passes or more), 1 play, 2 licenses: \(rows)")
            #expect(page.contains("play-stop") && page.contains("download-error"))
            try await browser.screenshot("admin-user")
        } catch {
            _ = try? await browser.screenshot("admin-activity-failed")
            await browser.quit()
            throw error
        }
        await browser.quit()
    }

    @Test("refused: a form without the session cookie (401), with a wrong CSRF token (403), a page without a session (303 to the login); the cookie is HttpOnly, SameSite=Strict, Path=/admin; signing out ends the session")
    func refusals() async throws {
        let (server, _) = try await Self.world()
        defer { server.stop() }
        try await TestMedia.offloaded {
            let jar = server.directory.appendingPathComponent("cookies").path
            func curl(_ arguments: [String]) throws -> (status: Int, body: String, headers: String) {
                let headers = server.directory.appendingPathComponent("headers").path
                let result = try ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/curl"),
                                                   ["-s", "-D", headers, "-w", "\n%{http_code}", "-b", jar, "-c", jar] + arguments)
                let status = Int(result.stdout.split(separator: "\n").last ?? "") ?? 0
                return (status, String(result.stdout.split(separator: "\n").dropLast().joined(separator: "\n")),
                        ((try? String(contentsOfFile: headers, encoding: .utf8)) ?? "").lowercased())
            }
            let page = try curl([server.url + "/admin/devices"])
            #expect(page.status == 303 && page.headers.contains("location: /admin/login"))
            let device = try #require(try AgentCommandTests.satchel(["licenses", "--data-dir", server.data, "--json"]).stdout
                .components(separatedBy: "\"deviceID\" : \"").dropFirst().first?.prefix(36))
            let anonymous = try curl(["-X", "POST", "--data", "csrf=anything", server.url + "/admin/devices/\(device)/disable"])
            #expect(anonymous.status == 401 && anonymous.body.contains("not-signed-in") && anonymous.headers.contains("application/problem+json"))
            // A wrong key: the login page again for a browser (tested above), problem+json for any other client; no cookie.
            let guess = try curl(["--data-urlencode", "key=not-the-operator-key", server.url + "/admin/login"])
            #expect(guess.status == 401 && guess.body.contains("wrong-operator-key") && guess.headers.contains("application/problem+json")
                    && !guess.headers.contains("set-cookie"))

            let login = try curl(["--data-urlencode", "key=\(Self.operatorKey)", server.url + "/admin/login"])
            #expect(login.status == 303)
            let cookie = login.headers.split(whereSeparator: \.isNewline).first { $0.lowercased().hasPrefix("set-cookie: satchel_admin=") } ?? ""
            #expect(cookie.contains("httponly") && cookie.contains("samesite=strict") && cookie.contains("path=/admin"), "\(cookie.prefix(30))…")
            let signedIn = try curl([server.url + "/admin/devices"])
            #expect(signedIn.status == 200 && signedIn.body.contains("laptop"))
            // The "deleted" notice names only an asset that is gone: an address cannot make it say anything else.
            for forged in ["movie", "Your%20account%20is%20locked"] {
                #expect(!(try curl([server.url + "/admin/assets?deleted=\(forged)"]).body.contains("class=\"flash\"")), "\(forged)")
            }
            let wrong = try curl(["-X", "POST", "--data", "csrf=not-this-sessions-token", server.url + "/admin/devices/\(device)/disable"])
            #expect(wrong.status == 403 && wrong.body.contains("bad-csrf-token"))
            let none = try curl(["-X", "POST", "--data", "", server.url + "/admin/devices/\(device)/disable"])
            #expect(none.status == 400 || none.status == 403, "no token at all: \(none.status)")
            #expect(try curl([server.url + "/admin/devices"]).body.contains("tag good"), "the device is still enabled")
            // With the session's token, a device that is not registered is 404, and nothing changes.
            let csrf = try #require(signedIn.body.components(separatedBy: "name=\"csrf\" value=\"").dropFirst().first?.prefix { $0 != "\"" })
            let unknown = try curl(["-X", "POST", "--data", "csrf=\(csrf)", server.url + "/admin/devices/no-such-device/disable"])
            #expect(unknown.status == 404 && unknown.body.contains("no device of this ID") && unknown.headers.contains("application/problem+json"))

            // Signing out ends the session: the same cookie no longer opens a page.
            let saved = try String(contentsOfFile: jar, encoding: .utf8)
            #expect(try curl(["-X", "POST", "--data", "csrf=\(csrf)", server.url + "/admin/logout"]).status == 303)
            try saved.write(toFile: jar, atomically: true, encoding: .utf8)  // the browser's old cookie, replayed
            #expect(try curl([server.url + "/admin/devices"]).status == 303)
        }
    }

    @Test("guessing the operator key: after 10 failed sign-ins from an address, every sign-in (the right key too) is 429 problem+json with Retry-After until the window passes; a form over 16 KiB is 413 problem+json")
    func guessesAndBigForms() async throws {
        let (server, _) = try await Self.world()
        defer { server.stop() }
        try await TestMedia.offloaded {
            func post(_ body: [String]) throws -> (status: Int, text: String) {
                let result = try ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/curl"), ["-s", "-i", "-w", "\n%{http_code}"] + body + [server.url + "/admin/login"])
                return (Int(result.stdout.split(separator: "\n").last ?? "") ?? 0, result.stdout.lowercased())
            }
            for attempt in 1...10 {
                #expect(try post(["--data-urlencode", "key=guess-\(attempt)"]).status == 401, "attempt \(attempt)")
            }
            let throttled = try post(["--data-urlencode", "key=\(Self.operatorKey)"])
            #expect(throttled.status == 429 && throttled.text.contains("too-many-logins") && throttled.text.contains("retry-after: ")
                    && throttled.text.contains("application/problem+json") && !throttled.text.contains("set-cookie"), "\(throttled.text.prefix(400))")
            let big = try post(["--data-urlencode", "key=" + String(repeating: "k", count: 17 * 1024)])
            #expect(big.status == 413 && big.text.contains("too-large") && big.text.contains("application/problem+json"), "\(big.text.prefix(300))")
        }
    }
}
