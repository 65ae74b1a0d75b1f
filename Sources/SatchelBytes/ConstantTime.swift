/// Comparisons whose running time does not depend on where the inputs differ.
public enum ConstantTime {
    /// True when `lhs` and `rhs` hold the same bytes. Only the lengths leak through timing.
    @inlinable
    public static func equals(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        var difference: UInt8 = 0
        for index in lhs.indices { difference |= lhs[index] ^ rhs[index] }
        return difference == 0
    }

    /// True when two byte collections hold the same bytes. Only the lengths leak through timing.
    @inlinable
    public static func equals<A: Collection, B: Collection>(_ lhs: A, _ rhs: B) -> Bool
    where A.Element == UInt8, B.Element == UInt8 {
        equals(Array(lhs), Array(rhs))
    }
}
