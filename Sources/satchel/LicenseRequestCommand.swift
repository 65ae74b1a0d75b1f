import ArgumentParser
import Foundation
import SatchelStreams
import NIOCore
import SatchelAgent
import SatchelBytes
import SatchelFairPlay
import SatchelProtection

/// `satchel license request`: the agent as a client of the license protocols players speak (FairPlay with the
/// software device, W3C Clear Key, HLS AES-128), with custom headers, custom data and a license token.
struct LicenseRequestCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "request", abstract: "Ask a FairPlay, Clear Key or AES-128 key server for a license, as a player would (keys are never printed).",
        subcommands: [FairPlay.self, ClearKeyRequest.self, AES128.self])

    /// What every request may carry.
    struct Extras: ParsableArguments {
        @Option(help: "The license (or key) URL.") var url: String
        @Option(name: .customLong("header"), help: "A custom header, \"Name: value\"; repeatable.") var headers: [String] = []
        @Option(name: .customLong("custom-data"), help: "Custom data for the challenge (sent as the body's customData, or base64 in X-Satchel-Custom-Data).")
        var customData: String?
        @Option(name: .customLong("custom-data-file"), help: "Read the custom data from this file.") var customDataFile: String?
        @Option(help: "The license token (or --token-file, $SATCHEL_TOKEN): sent as Authorization: Bearer, or in --token-header.") var token: String?
        @OptionGroup var tokenSource: TokenSource
        @Option(name: .customLong("token-header"), help: "Send the token as this header's value (default: Authorization: Bearer).") var tokenHeader: String?
        @Option(help: "Seconds the request may take (default 30).") var timeout: Int64 = 30

        func validate() throws {
            guard customData == nil || customDataFile == nil else { throw ValidationError("give --custom-data or --custom-data-file, not both") }
            guard (1...600).contains(timeout) else { throw ValidationError("--timeout is 1 to 600 seconds") }
        }

        func make() throws -> LicenseRequestExtras {
            let data = try customDataFile.map { String(decoding: try FileIO.read($0, what: "custom data"), as: UTF8.self) } ?? customData
            return try LicenseRequestExtras(headers: headers.map(LicenseRequestExtras.header), customData: data, token: try tokenSource.resolve(token),
                                            tokenHeader: tokenHeader)
        }

        var client: KeyRequestClient { KeyRequestClient(timeout: .seconds(timeout)) }
    }

    /// `satchel license request fairplay`: SPC from the software device, CKC from the server, opened.
    struct FairPlay: SatchelAsyncCommand {
        static let configuration = CommandConfiguration(commandName: "fairplay",
                                                        abstract: "Send an SPC made by the software FairPlay device and open the CKC (development/test credentials).")
        @OptionGroup var extras: Extras
        @Option(help: "The Application Certificate file (DER or PEM).") var certificate: String?
        @Option(name: .customLong("certificate-url"), help: "Fetch the Application Certificate from this URL (with the same headers and token).")
        var certificateURL: String?
        @OptionGroup var secrets: SecretOptions
        @Option(name: .customLong("asset-id"), help: "The asset ID (the skd:// host of the key URI).") var assetID: String
        @Option(help: "How the SPC is sent: raw, json or apple (default json).") var shape = "json"
        @Option(name: .customLong("ckc-out"), help: "Write the CKC to this file.") var ckcOut: String?
        @Option(name: .customLong("expect-content-key"), help: "Check the recovered key against this hex value.") var expectContentKey: String?
        @Option(name: .customLong("content-key-out"), help: "Write the recovered key (binary, mode 0600) to this file.") var contentKeyOut: String?

        func validate() throws {
            guard (certificate == nil) != (certificateURL == nil) else { throw ValidationError("give exactly one of --certificate or --certificate-url") }
            guard KeyRequestClient.FairPlayShape(rawValue: shape) != nil else { throw ValidationError("--shape: use raw, json or apple") }
        }

        func execute() async throws {
            let extras = try self.extras.make()
            let client = self.extras.client
            let certificateBytes: [UInt8]
            if let certificateURL {
                certificateBytes = try await client.fairPlayCertificate(url: certificateURL, extras: extras)
            } else {
                certificateBytes = try FileIO.read(certificate ?? "", what: "certificate")
            }
            let simulator = try DeviceSimulator(certificate: certificateBytes, dFunction: secrets.dFunction())
            let (spc, session) = try simulator.makeSPC(DeviceSimulator.Options(assetID: Array(assetID.utf8)))
            let ckc = try await client.fairPlay(spc: spc, url: self.extras.url, assetID: assetID,
                                                shape: KeyRequestClient.FairPlayShape(rawValue: shape) ?? .json, extras: extras)
            print("CKC received: \(ckc.count) bytes (\(shape) request)")
            if let ckcOut { try FileIO.write(ckc, to: ckcOut) }
            let opened = try DeviceSimulator.openCKC(ckc, session: session)
            try FPSSimulateCommand.OpenCKC.report(opened, session: session, expectContentKey: expectContentKey, contentKeyOut: contentKeyOut)
        }
    }

    /// `satchel license request clearkey`.
    struct ClearKeyRequest: SatchelAsyncCommand {
        static let configuration = CommandConfiguration(commandName: "clearkey", abstract: "Ask a W3C Clear Key license server for keys.")
        @OptionGroup var extras: Extras
        @Option(name: .customLong("kid"), help: "A key ID (32 hex digits); repeatable.") var keyIDs: [String] = []
        @Flag(help: "Ask for a persistent-license session.") var persistent = false
        @Option(name: .customLong("keys-out"), help: "Write the keys as keys.json ({\"keys\": [{\"keyId\", \"key\"}]}, mode 0600).") var keysOut: String?

        func execute() async throws {
            guard !keyIDs.isEmpty else { throw CLIError("give at least one --kid") }
            let ids = try keyIDs.map { text in
                do { return try KeyID(hex: text) } catch { throw CLIError("--kid \(text.prefix(40)): 32 hex digits") }
            }
            let keys = try await extras.client.clearKey(keyIDs: ids, url: extras.url, persistent: persistent, extras: try extras.make())
            print("Clear Key license: \(keys.count) of \(ids.count) key\(ids.count == 1 ? "" : "s") (\(persistent ? "persistent-license" : "temporary"))")
            for key in keys { print("key \(key.keyID.hex)") }
            if let keysOut {
                let entries = keys.map { "{\"keyId\":\"\($0.keyID.hex)\",\"key\":\"\(Hex.encode($0.key.bytes))\"}" }
                try FileIO.write(Array("{\"keys\":[\(entries.joined(separator: ","))]}\n".utf8), to: keysOut, mode: 0o600)
                print("keys written to \(keysOut)")
            }
        }
    }

    /// `satchel license request aes128`.
    struct AES128: SatchelAsyncCommand {
        static let configuration = CommandConfiguration(commandName: "aes128", abstract: "Fetch an HLS AES-128 key (an EXT-X-KEY URI).")
        @OptionGroup var extras: Extras
        @Option(name: .customLong("key-out"), help: "Write the key (16 bytes, mode 0600) to this file.") var keyOut: String?

        func execute() async throws {
            let key = try await extras.client.aes128Key(url: extras.url, extras: try extras.make())
            print("AES-128 key: \(key.bytes.count) bytes")
            if let keyOut {
                try FileIO.write(key.bytes, to: keyOut, mode: 0o600)
                print("key written to \(keyOut)")
            }
        }
    }
}
