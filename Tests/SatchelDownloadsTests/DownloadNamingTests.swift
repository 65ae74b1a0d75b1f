import Foundation
import SatchelDownloads
import Testing

/// An asset added without `--id` gets the name a person would give it, safe as a folder name and unique.
@Suite("Download naming")
struct DownloadNamingTests {
    static func id(_ url: String, taken: Set<String> = []) throws -> String {
        DownloadNaming.id(for: try #require(URL(string: url)), taken: { taken.contains($0) })
    }

    @Test("the playlist's or file's own name, or its folder's when the file's name is generic")
    func readable() throws {
        #expect(try Self.id("https://cdn.example/movie/master.m3u8") == "movie")
        #expect(try Self.id("https://cdn.example/films/the-heist/index.m3u8?token=abc") == "the-heist")
        #expect(try Self.id("https://cdn.example/show.ism/Manifest") == "show")
        #expect(try Self.id("https://cdn.example/trailer.mp4") == "trailer")
        #expect(try Self.id("https://cdn.example/season-1/episode-3.mpd") == "episode-3")
        #expect(try Self.id("https://cdn.example/manifest.mpd") == "cdn.example", "nothing but a generic name: the host")
    }

    @Test("unique: a taken name gets the next free number")
    func unique() throws {
        #expect(try Self.id("https://cdn.example/movie/master.m3u8", taken: ["movie"]) == "movie-2")
        #expect(try Self.id("https://cdn.example/movie/master.m3u8", taken: ["movie", "movie-2", "movie-3"]) == "movie-4")
    }

    @Test("a hostile or odd name becomes a safe folder name: no path, no leading dot, bounded length")
    func safe() throws {
        #expect(try Self.id("https://cdn.example/%2e%2e/master.m3u8") == "cdn.example")
        #expect(try Self.id("https://cdn.example/a%20b%27%3Bc/master.m3u8") == "a-b-c")
        #expect(try Self.id("https://cdn.example/.hidden/x.m3u8") == "x")
        #expect(try Self.id("https://cdn.example/caf%C3%A9/master.m3u8") == "caf")
        let long = String(repeating: "a", count: 300)
        #expect(try Self.id("https://cdn.example/\(long)/master.m3u8").count == 64)
        for url in ["https://cdn.example/", "https://cdn.example/%2F%2F/", "https://cdn.example/../master.m3u8"] {
            let id = try Self.id(url)
            #expect(!id.isEmpty && !id.contains("/") && !id.hasPrefix(".") && id != "..", "\(url): \(id)")
        }
    }
}
