/// The TLLV blocks of one payload, in payload order, with lookup by tag.
public struct TLLVList: Sendable, Equatable, Sequence {
    /// The blocks in the order they appeared.
    public let blocks: [TLLV]
    private let indexByTag: [TLLVTag: Int]

    /// Builds a list; throws when a tag appears twice (the guide allows each tag once).
    public init(_ blocks: [TLLV]) throws(FairPlayError) {
        var index: [TLLVTag: Int] = [:]
        for (position, block) in blocks.enumerated() {
            guard index[block.tag] == nil else { throw .duplicateTag(block.tag) }
            index[block.tag] = position
        }
        self.blocks = blocks
        self.indexByTag = index
    }

    /// The block with `tag`, if present.
    public subscript(tag: TLLVTag) -> TLLV? {
        guard let position = indexByTag[tag] else { return nil }
        return blocks[position]
    }

    /// The block with `tag`, or a typed error naming the missing block.
    public func required(_ tag: TLLVTag) throws(FairPlayError) -> TLLV {
        guard let block = self[tag] else { throw .missingTLLV(tag) }
        return block
    }

    /// True when a block with `tag` is present.
    public func contains(_ tag: TLLVTag) -> Bool { indexByTag[tag] != nil }

    /// Blocks whose tags the programming guide does not define.
    public var undefined: [TLLV] { blocks.filter { !$0.tag.isDefined } }

    public func makeIterator() -> IndexingIterator<[TLLV]> { blocks.makeIterator() }

    public static func == (lhs: TLLVList, rhs: TLLVList) -> Bool { lhs.blocks == rhs.blocks }
}
