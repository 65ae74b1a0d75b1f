/// The TLLV blocks of one payload, in payload order, with lookup by tag.
///
/// Real SPCs and CKCs hold a few dozen blocks, where a linear scan of the tags beats hashing;
/// duplicate detection switches to a set for large (hostile) payloads so it stays linear-time.
public struct TLLVList: Sendable, Equatable, Sequence {
    /// The blocks in the order they appeared.
    public let blocks: [TLLV]
    private let tags: [UInt64]

    /// Builds a list; throws when a tag appears twice (the guide allows each tag once).
    public init(_ blocks: [TLLV]) throws(FairPlayError) {
        let tags = blocks.map(\.tag.rawValue)
        if tags.count <= 64 {
            for index in tags.indices.dropFirst() where tags[..<index].contains(tags[index]) {
                throw .duplicateTag(TLLVTag(tags[index]))
            }
        } else {
            var seen = Set<UInt64>(minimumCapacity: tags.count)
            for tag in tags where !seen.insert(tag).inserted { throw .duplicateTag(TLLVTag(tag)) }
        }
        self.blocks = blocks
        self.tags = tags
    }

    /// The block with `tag`, if present.
    public subscript(tag: TLLVTag) -> TLLV? {
        guard let position = tags.firstIndex(of: tag.rawValue) else { return nil }
        return blocks[position]
    }

    /// The block with `tag`, or a typed error naming the missing block.
    public func required(_ tag: TLLVTag) throws(FairPlayError) -> TLLV {
        guard let block = self[tag] else { throw .missingTLLV(tag) }
        return block
    }

    /// True when a block with `tag` is present.
    public func contains(_ tag: TLLVTag) -> Bool { tags.contains(tag.rawValue) }

    /// Blocks whose tags the programming guide does not define.
    public var undefined: [TLLV] { blocks.filter { !$0.tag.isDefined } }

    public func makeIterator() -> IndexingIterator<[TLLV]> { blocks.makeIterator() }

    public static func == (lhs: TLLVList, rhs: TLLVList) -> Bool { lhs.blocks == rhs.blocks }
}
