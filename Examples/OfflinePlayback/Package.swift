// swift-tools-version: 6.0
import PackageDescription

// An app's use of Satchel's libraries, through their public API only: register the device, download an asset
// with a persistent license, and play it offline through the local playback proxy.
let package = Package(
    name: "OfflinePlayback",
    platforms: [.macOS(.v14), .iOS(.v17), .tvOS(.v17)],
    dependencies: [.package(name: "Satchel", path: "../..")],
    targets: [
        .executableTarget(
            name: "OfflinePlayback",
            dependencies: [
                .product(name: "SatchelAgent", package: "Satchel"),
                .product(name: "SatchelDownloads", package: "Satchel"),
                .product(name: "SatchelDevice", package: "Satchel"),
                .product(name: "SatchelPlayback", package: "Satchel"),
            ]
        )
    ]
)
