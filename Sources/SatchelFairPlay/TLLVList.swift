/// The TLLV blocks of one payload, in payload order, with lookup by tag.
///
/// Real SPCs and CKCs hold a few dozen blocks, where a linear scan of the tags beats hashing;
/// large (hostile) payloads get a hash index so that lookups and duplicate detection stay fast.
public struct TLLVList: Sendable, Equatable, Sequence {
    /// The blocks in the order they appeared.
    public let blocks: [TLLV]
    private let tags: [UInt64]
    private let index: [UInt64: Int]?
    private static let linearLimit = 64

    /// Builds a list; throws when a tag appears twice (the guide allows each tag once).
    public init(_ blocks: [TLLV]) throws(FairPlayError) {
        let tags = blocks.map(\.tag.rawValue)
        if tags.count <= Self.linearLimit {
            for position in tags.indices.dropFirst() where tags[..<position].contains(tags[position]) {
                throw .duplicateTag(TLLVTag(tags[position]))
            }
            index = nil
        } else {
            var built = [UInt64: Int](minimumCapacity: tags.count)
            for (position, tag) in tags.enumerated() {
                guard built.updateValue(position, forKey: tag) == nil else { throw .duplicateTag(TLLVTag(tag)) }
            }
            index = built
        }
        self.blocks = blocks
        self.tags = tags
    }

    /// The block with `tag`, if present.
    public subscript(tag: TLLVTag) -> TLLV? {
        guard let position = index.map({ $0[tag.rawValue] }) ?? tags.firstIndex(of: tag.rawValue) else { return nil }
        return blocks[position]
    }

    /// The block with `tag`, or a typed error naming the missing block.
    public func required(_ tag: TLLVTag) throws(FairPlayError) -> TLLV {
        guard let block = self[tag] else { throw .missingTLLV(tag) }
        return block
    }

    /// True when a block with `tag` is present.
    public func contains(_ tag: TLLVTag) -> Bool { self[tag] != nil }

    /// Blocks whose tags the programming guide does not define.
    public var undefined: [TLLV] { blocks.filter { !$0.tag.isDefined } }

    public func makeIterator() -> IndexingIterator<[TLLV]> { blocks.makeIterator() }

    public static func == (lhs: TLLVList, rhs: TLLVList) -> Bool { lhs.blocks == rhs.blocks }
}
