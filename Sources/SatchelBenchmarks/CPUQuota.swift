import Foundation

/// A CPU quota for one process (a cgroup of its own under the `cpu` controller, v1 or v2): the scale-out rows give
/// each backplane node a fixed share of a core, as a node on a machine of its own would have; without it a single
/// node already fills this machine's cores, and a second node on the same cores cannot show what it adds. Needs root
/// and a writable cgroup file system; ``make(pid:cores:)`` answers nil otherwise.
struct CPUQuota {
    let path: String

    /// Puts `pid` (all its threads) under a quota of `cores` (0.5: half a core).
    static func make(pid: pid_t, cores: Double) -> CPUQuota? {
        let period = 100_000
        let quota = Int(Double(period) * cores)
        let v1 = "/sys/fs/cgroup/cpu", v2 = "/sys/fs/cgroup"
        let name = "satchel-bench-\(getpid())-\(pid)"
        if FileManager.default.isWritableFile(atPath: v1 + "/cgroup.procs") {
            let path = v1 + "/" + name
            guard mkdir(path, 0o755) == 0, write("\(period)", to: path + "/cpu.cfs_period_us"), write("\(quota)", to: path + "/cpu.cfs_quota_us"),
                  write("\(pid)", to: path + "/cgroup.procs") else { rmdir(path); return nil }
            return CPUQuota(path: path)
        }
        if (try? String(contentsOfFile: v2 + "/cgroup.subtree_control", encoding: .utf8))?.contains("cpu") == true {
            let path = v2 + "/" + name
            guard mkdir(path, 0o755) == 0, write("\(quota) \(period)", to: path + "/cpu.max"), write("\(pid)", to: path + "/cgroup.procs") else {
                rmdir(path)
                return nil
            }
            return CPUQuota(path: path)
        }
        return nil
    }

    /// Removes the group (its process has exited).
    func remove() { rmdir(path) }

    private static func write(_ text: String, to file: String) -> Bool {
        (try? text.write(toFile: file, atomically: false, encoding: .utf8)) != nil
    }
}
