import CSatchelSystem
import Foundation

/// What the machine's memory allows a process.
public enum MachineMemory {
    /// The largest allocation the kernel lets a process reserve: memory and swap together (Linux's default
    /// overcommit refuses a larger one, and Swift stops the process on a refused allocation); the physical memory
    /// where swap is unknown.
    public static var addressSpace: Int {
        let total = satchel_memory_and_swap()
        return Int(clamping: total > 0 ? total : ProcessInfo.processInfo.physicalMemory)
    }
}
