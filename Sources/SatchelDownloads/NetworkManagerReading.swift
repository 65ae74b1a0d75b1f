/// What NetworkManager says about the network, read from
/// `nmcli --terse --fields GENERAL.DEVICE,GENERAL.TYPE,GENERAL.STATE,GENERAL.METERED device show`: one block of
/// `FIELD:value` lines per device, blocks separated by an empty line. Pure: the text in, a ``NetworkType`` out.
package enum NetworkManagerReading {
    /// The arguments given to `nmcli`.
    package static let arguments = ["--terse", "--fields", "GENERAL.DEVICE,GENERAL.TYPE,GENERAL.STATE,GENERAL.METERED", "device", "show"]
    /// NetworkManager's state code of a connected device (`100 (connected)`).
    static let connected = 100
    /// At most this many characters of an answer are read (a machine has a few devices, a few lines each).
    package static let maximumLength = 1 << 20

    /// One device as `nmcli` lists it.
    package struct Device: Equatable, Sendable {
        /// The interface's name (`eth0`, `wlan0`).
        package var name = ""
        /// NetworkManager's device type (`ethernet`, `wifi`, `gsm`, `loopback`).
        package var type = ""
        /// The state's code (100: connected), nil when not a number.
        package var state: Int?
        /// The metered value: `yes`, `no`, `yes (guessed)`, `no (guessed)` or `unknown`.
        package var metered = ""

        /// A device as listed.
        package init(name: String = "", type: String = "", state: Int? = nil, metered: String = "") {
            (self.name, self.type, self.state, self.metered) = (name, type, state, metered)
        }
    }

    /// The devices listed in `text`.
    package static func devices(_ text: Substring) -> [Device] {
        var devices: [Device] = []
        var device: Device?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            guard let colon = line.firstIndex(of: ":") else {  // an empty line ends a device's block
                if let finished = device { devices.append(finished) }
                device = nil
                continue
            }
            let value = String(line[line.index(after: colon)...])
            switch line[..<colon] {
            case "GENERAL.DEVICE":
                if let finished = device { devices.append(finished) }
                device = Device(name: value)
            case "GENERAL.TYPE": device?.type = value
            case "GENERAL.STATE": device?.state = Int(value.prefix { $0.isNumber }.prefix(4))
            case "GENERAL.METERED": device?.metered = value
            default: continue
            }
        }
        if let device { devices.append(device) }
        return devices
    }

    /// The network's type from `nmcli`'s answer: unmetered when a connected device (not the loopback) is not metered,
    /// metered when every connected one is, unknown otherwise — a NetworkManager that manages none of the
    /// interfaces in use does not mean there is no network.
    package static func networkType(_ text: Substring) -> NetworkType {
        let connected = devices(text.prefix(maximumLength)).filter { $0.state == Self.connected && $0.type != "loopback" }
        let verdicts = connected.map { meteredness($0.metered) }
        if verdicts.contains(false) { return .unmetered }
        if verdicts.contains(true) { return .cellular }
        return .unknown
    }

    /// True for metered, false for not, nil for unknown.
    static func meteredness(_ value: String) -> Bool? {
        switch value.split(separator: " ").first {
        case "yes": return true
        case "no": return false
        default: return nil
        }
    }
}
