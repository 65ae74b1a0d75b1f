// swift-tools-version: 6.0
import PackageDescription

// Satchel: an open-source Swift platform for protected video.
// Licensed under the Apache License, Version 2.0 (see LICENSE).
// The module layout follows ../shared/DESIGN.md; lower layers never import higher ones.
let package = Package(
    name: "Satchel",
    platforms: [.macOS(.v14), .iOS(.v17), .tvOS(.v17)],
    products: [
        .library(name: "SatchelBytes", targets: ["SatchelBytes"]),
        .library(name: "SatchelFairPlay", targets: ["SatchelFairPlay"]),
        .library(name: "SatchelMedia", targets: ["SatchelMedia"]),
        .library(name: "SatchelProtection", targets: ["SatchelProtection"]),
        .library(name: "SatchelRights", targets: ["SatchelRights"]),
        .library(name: "SatchelBackplane", targets: ["SatchelBackplane"]),
        .library(name: "SatchelAgent", targets: ["SatchelAgent"]),
        .library(name: "SatchelPackager", targets: ["SatchelPackager"]),
        .library(name: "SatchelLicensing", targets: ["SatchelLicensing"]),
        .library(name: "SatchelStreams", targets: ["SatchelStreams"]),
        .library(name: "SatchelDownloads", targets: ["SatchelDownloads"]),
        .library(name: "SatchelPlayback", targets: ["SatchelPlayback"]),
        .library(name: "SatchelDevice", targets: ["SatchelDevice"]),
        .library(name: "SatchelSystem", targets: ["SatchelSystem"]),
        .executable(name: "satchel", targets: ["satchel"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.0"),
        .package(url: "https://github.com/vapor/fluent-kit.git", from: "1.57.0"),
        .package(url: "https://github.com/vapor/sql-kit.git", from: "3.30.0"),
        .package(url: "https://github.com/vapor/fluent-sqlite-driver.git", from: "4.9.0"),
        .package(url: "https://github.com/vapor/fluent-postgres-driver.git", from: "2.14.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.0"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.7.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.1.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.6.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.80.0"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.30.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.30.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.3.0"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache.git", from: "2.0.0"),
        // The documentation's build (scripts/docs): `swift package generate-documentation`.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin.git", from: "1.4.0"),
    ],
    targets: [
        // Layer 0: the shared bounds-checked big-endian reader/writer, hex, secure random, constant-time compare.
        .target(name: "SatchelBytes"),
        // Layer 0: media formats: ISO BMFF, MPEG-TS, H.264/AAC helpers, HLS, DASH, Smooth. Pure value logic.
        .target(name: "SatchelMedia", dependencies: ["SatchelBytes"]),
        // Layer 0: AES-128-CTR and AES-128-CBC in place with the processor's AES instructions (x86-64), where the AES
        // of swift-crypto can only write a new buffer (and its CBC goes a block at a time).
        .target(name: "CSatchelCrypto"),
        // Layer 1: content encryption and decryption: AES-128, SAMPLE-AES, CENC cenc/cbcs, pssh, Clear Key.
        .target(
            name: "SatchelProtection",
            dependencies: [
                "SatchelBytes", "SatchelMedia", "CSatchelCrypto",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ]
        ),
        // Layer 0: portable wrappers over system calls Swift's Glibc module lacks (extended attributes).
        .target(name: "CSatchelSystem"),
        // Layer 0: the crash-safe file writer, the lock box, file-system errors.
        .target(name: "SatchelSystem", dependencies: ["SatchelBytes", "CSatchelSystem", .product(name: "Logging", package: "swift-log")]),
        // Layer 1: opening a FluentKit database with its migrations (the key store and the download index).
        .target(name: "SatchelStorage", dependencies: ["SatchelBytes", .product(name: "FluentKit", package: "fluent-kit"), .product(name: "SQLKit", package: "sql-kit"), .product(name: "Logging", package: "swift-log"), .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio")]),
        // Layer 2: the backplane: users and devices, limits, download permission, commands and settings — the rules pure,
        // the store behind a protocol (FluentKit on SQLite or PostgreSQL).
        .target(name: "SatchelBackplane", dependencies: ["SatchelBytes", "SatchelStorage", .product(name: "FluentKit", package: "fluent-kit"),
                                                         .product(name: "SQLKit", package: "sql-kit"),
                                                         .product(name: "PostgresNIO", package: "postgres-nio"),
                                                         .product(name: "Logging", package: "swift-log")]),
        // Layer 1: one rights model, rights evaluation, the secure clock, license and time token formats. Pure.
        .target(name: "SatchelRights", dependencies: ["SatchelBytes", .product(name: "Crypto", package: "swift-crypto")]),
        // Layer 2: media files in, protected HLS / DASH packages out.
        .target(
            name: "SatchelPackager",
            dependencies: [
                "SatchelBytes", "SatchelFairPlay", "SatchelMedia", "SatchelProtection", "SatchelSystem",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ]
        ),
        // Layer 2: keys, policies, entitlements, license issuance and audit; FluentKit storage.
        .target(
            name: "SatchelLicensing",
            dependencies: [
                "SatchelBytes", "SatchelFairPlay", "SatchelProtection", "SatchelRights", "SatchelStorage", "SatchelSystem",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "FluentKit", package: "fluent-kit"),
                .product(name: "SQLKit", package: "sql-kit"),
                .product(name: "FluentSQLiteDriver", package: "fluent-sqlite-driver"),
                .product(name: "FluentPostgresDriver", package: "fluent-postgres-driver"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Layer 1: the pure stream model: manifests into plans (HLS, DASH, Smooth, single files; "fetch these next",
        // never the network), DASH and Smooth transcribed to HLS, the asset map of a session's routes, key forwarding.
        .target(name: "SatchelStreams", dependencies: ["SatchelBytes", "SatchelMedia", "SatchelProtection"]),
        // Layer 3: download to go: planning per format, the queue and its rules, the index (SQLite), the fetcher (HTTP).
        .target(
            name: "SatchelDownloads",
            dependencies: [
                "SatchelBytes", "SatchelMedia", "SatchelRights", "SatchelStorage", "SatchelStreams", "SatchelSystem", "CSatchelSystem",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "FluentKit", package: "fluent-kit"),
                .product(name: "FluentSQLiteDriver", package: "fluent-sqlite-driver"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Layer 3: the device agent: identity, license acquisition and store, renewal, release, the secure clock.
        .target(
            name: "SatchelAgent",
            dependencies: [
                "SatchelBytes", "SatchelProtection", "SatchelRights", "SatchelStorage", "SatchelStreams", "SatchelSystem", "SatchelBackplane",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "FluentKit", package: "fluent-kit"),
                .product(name: "FluentSQLiteDriver", package: "fluent-sqlite-driver"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        // Layer 4: the playback proxy: sessions on loopback, playlists and media of downloaded assets, decrypted for players without DRM.
        .target(
            name: "SatchelPlayback",
            dependencies: [
                "SatchelBytes", "SatchelHTTP", "SatchelMedia", "SatchelProtection", "SatchelRights", "SatchelStreams", "SatchelSystem",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // Layer 5: the device half assembled for an app: the agent as the proxy's rights, the engine's license step, the
        // download store and online sources as the proxy's libraries.
        .target(
            name: "SatchelDevice",
            dependencies: [
                "SatchelAgent", "SatchelBackplane", "SatchelBytes", "SatchelDownloads", "SatchelFairPlay", "SatchelPlayback", "SatchelRights",
                "SatchelStreams", "SatchelSystem", .product(name: "Crypto", package: "swift-crypto"), .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Layer 3: the HTTP kit every Satchel server shares (over Hummingbird, nothing else of Satchel):
        // connection limits and timeouts, problem+json, 404/405 answers.
        .target(
            name: "SatchelHTTP",
            dependencies: [
                "SatchelBytes", "SatchelSystem",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdHTTP2", package: "hummingbird"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // Layer 4: the HTTP application (license endpoints, health, metrics, the origin, the web pages).
        // Web/ holds the pages' static assets and templates (the browser player's ES modules in Web/player/).
        .target(
            name: "SatchelServer",
            dependencies: [
                "SatchelBytes", "SatchelMedia", "SatchelFairPlay", "SatchelProtection", "SatchelLicensing", "SatchelRights", "SatchelHTTP", "SatchelBackplane", "SatchelStorage",
                .product(name: "SQLKit", package: "sql-kit"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Mustache", package: "swift-mustache"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                "SatchelSystem",
            ],
            resources: [.copy("Web")]
        ),
        // Layer 2: FairPlay Streaming: TLLV, SPC, CKC, D functions, KSM core, device simulator, inspector (AES-CBC from
        // SatchelProtection: one wrapper of it).
        .target(
            name: "SatchelFairPlay",
            dependencies: [
                "SatchelProtection",
                "SatchelBytes",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ]
        ),
        // Layer 6: the thin command-line tool.
        .executableTarget(
            name: "satchel",
            dependencies: [
                "SatchelBytes",
                "SatchelFairPlay",
                "SatchelProtection",
                "SatchelPackager",
                "SatchelLicensing",
                "SatchelBackplane",
                "SatchelServer",
                "SatchelRights",
                "SatchelAgent",
                "SatchelDownloads",
                "SatchelPlayback",
                "SatchelDevice",
                "SatchelHTTP",
                "SatchelStreams",
                "SatchelSystem",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Layer 6: benchmarks, their own executable; tests never assert on time.
        .executableTarget(
            name: "SatchelBenchmarks",
            dependencies: [
                "SatchelDevice",
                "SatchelStreams",
                "SatchelBytes",
                "SatchelFairPlay",
                "SatchelProtection",
                "SatchelMedia",
                "SatchelPackager",
                "SatchelLicensing",
                "SatchelServer",
                "SatchelRights",
                "SatchelAgent",
                "SatchelDownloads",
                "SatchelPlayback",
                "SatchelFuzzTargets",
                "SatchelSystem",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                "SatchelBackplane", "SatchelHTTP", "SatchelStorage", .product(name: "SQLKit", package: "sql-kit"),
            ]
        ),
        .testTarget(name: "SatchelBytesTests", dependencies: ["SatchelBytes", "SatchelSystem"]),
        .testTarget(name: "SatchelSystemTests", dependencies: ["SatchelSystem"]),
        .testTarget(name: "SatchelAgentTests", dependencies: ["SatchelBytes", "SatchelAgent", "SatchelBackplane", "SatchelRights", .product(name: "Crypto", package: "swift-crypto"),
                                                            .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "SatchelPlaybackTests", dependencies: ["SatchelSystem", "SatchelDevice", "SatchelRights", "SatchelStreams", "SatchelDownloads", "SatchelPlayback", "SatchelProtection", "SatchelPackager", "SatchelMedia", "SatchelTestSupport",
                                                               .product(name: "AsyncHTTPClient", package: "async-http-client"),
                                                               .product(name: "Hummingbird", package: "hummingbird"),
                                                               .product(name: "HTTPTypes", package: "swift-http-types"),
                                                               .product(name: "NIOCore", package: "swift-nio"), "SatchelAgent", "SatchelBytes",
                                                               .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "SatchelRightsTests", dependencies: ["SatchelBytes", "SatchelRights", .product(name: "Crypto", package: "swift-crypto")]),
        .testTarget(name: "SatchelStreamsTests", dependencies: ["SatchelBytes", "SatchelMedia", "SatchelPackager", "SatchelProtection", "SatchelStreams",
                                                              "SatchelTestSupport"]),
        .testTarget(name: "SatchelHTTPTests", dependencies: ["SatchelBytes", "SatchelHTTP", "SatchelSystem", .product(name: "NIOEmbedded", package: "swift-nio"), .product(name: "NIOCore", package: "swift-nio"),
                                                          .product(name: "NIOPosix", package: "swift-nio"),
                                                          .product(name: "Hummingbird", package: "hummingbird"), .product(name: "HummingbirdTesting", package: "hummingbird"),
                                                          .product(name: "HTTPTypes", package: "swift-http-types")]),
        .testTarget(name: "SatchelLicensingTests", dependencies: ["SatchelBytes", "SatchelLicensing", "SatchelProtection", "SatchelRights", "SatchelBackplane", "SatchelStorage", .product(name: "SQLKit", package: "sql-kit"),
                                                          .product(name: "FluentKit", package: "fluent-kit"),
                                                          .product(name: "FluentSQLiteDriver", package: "fluent-sqlite-driver"), .product(name: "Logging", package: "swift-log")]),
        // Test fixtures shared by test targets: media made with ffmpeg at test time, tool runners.
        .target(name: "SatchelTestSupport", dependencies: ["SatchelBytes", "SatchelSystem", "SatchelMedia", "SatchelHTTP", .product(name: "Hummingbird", package: "hummingbird"),
                                                          .product(name: "AsyncHTTPClient", package: "async-http-client"),
                                                          .product(name: "Logging", package: "swift-log"),
                                                          .product(name: "HTTPTypes", package: "swift-http-types"),
                                                          .product(name: "NIOCore", package: "swift-nio")],
                path: "Tests/SatchelTestSupport"),
        .testTarget(name: "SatchelMediaTests", dependencies: ["SatchelBytes", "SatchelMedia", "SatchelTestSupport", "SatchelFuzzTargets"]),
        // Fuzz targets (one per parser), the seeded mutator and a corpus from real packages: run in batches by the
        // tests, and for a count or a time by `SatchelBenchmarks fuzz` (scripts/fuzz).
        .target(name: "SatchelFuzzTargets", dependencies: ["SatchelBytes", "SatchelMedia", "SatchelProtection", "SatchelFairPlay", "SatchelPackager",
                                                           "SatchelAgent", "SatchelBackplane", .product(name: "Crypto", package: "swift-crypto")],
                path: "Tests/SatchelFuzzTargets"),
        .testTarget(
            name: "SatchelServerTests",
            dependencies: [
                "SatchelBytes", "SatchelFairPlay", "SatchelProtection", "SatchelPackager", "SatchelLicensing", "SatchelServer", "SatchelRights", "SatchelBackplane",
                "SatchelStorage", "SatchelHTTP", "SatchelSystem", "SatchelTestSupport", .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Prometheus", package: "swift-prometheus"), .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"), .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "JWTKit", package: "jwt-kit"), .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "Crypto", package: "swift-crypto"), .product(name: "FluentKit", package: "fluent-kit"),
                .product(name: "SQLKit", package: "sql-kit"), .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "SatchelDownloadsTests",
            dependencies: ["SatchelAgent", "SatchelDevice", "SatchelStreams", "SatchelPlayback",
                "SatchelBytes", "SatchelMedia", "SatchelPackager", "SatchelProtection", "SatchelDownloads", "SatchelRights", "SatchelStorage", "SatchelSystem",
                "SatchelTestSupport", .product(name: "FluentKit", package: "fluent-kit"), .product(name: "Logging", package: "swift-log"),
                .product(name: "FluentSQLiteDriver", package: "fluent-sqlite-driver"),
            ]
        ),
        .testTarget(name: "SatchelPackagerTests",
                    dependencies: ["SatchelBytes", "SatchelMedia", "SatchelProtection", "SatchelPackager", "SatchelSystem", "SatchelTestSupport"],
                    exclude: ["check_manifests.py"]),
        .testTarget(name: "SatchelBackplaneTests", dependencies: ["SatchelBackplane", "SatchelBytes", "SatchelStorage", "SatchelTestSupport",
                                                                .product(name: "FluentKit", package: "fluent-kit"),
                                                                .product(name: "FluentSQLiteDriver", package: "fluent-sqlite-driver"),
                                                                .product(name: "FluentPostgresDriver", package: "fluent-postgres-driver"),
                                                                .product(name: "SQLKit", package: "sql-kit"),
                                                                .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "SatchelProtectionTests", dependencies: ["SatchelBytes", "SatchelMedia", "SatchelProtection", "SatchelTestSupport", "CSatchelCrypto", .product(name: "Crypto", package: "swift-crypto")]),
        // Drives the built `satchel` binary end to end; depending on the target makes `swift test` build it.
        .testTarget(name: "SatchelCLITests", dependencies: ["SatchelSystem", "SatchelDevice", "SatchelDownloads", "SatchelBackplane", "SatchelRights", "satchel", "SatchelAgent", "SatchelBytes", "SatchelFairPlay", "SatchelMedia", "SatchelPackager",
                                                             "SatchelLicensing", "SatchelProtection", "SatchelTestSupport", "SatchelStreams", .product(name: "Crypto", package: "swift-crypto"),
                                                             .product(name: "Logging", package: "swift-log"), .product(name: "SQLKit", package: "sql-kit")]),
        .testTarget(
            name: "SatchelFairPlayTests",
            dependencies: [
                "SatchelBytes",
                "SatchelFairPlay",
                "SatchelTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
