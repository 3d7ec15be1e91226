import CCSyncSystem

/// The engine behind ``JSONParser``: one pass over a UTF-8 buffer, no recursion.
///
/// Open arrays and objects live on ``frames``; the finished elements of every open array sit
/// on one ``elements`` stack and the members of every open object on one ``members`` stack,
/// and a closing bracket moves its container's share out into the new value. Nesting
/// therefore costs heap, never thread stack, and the depth limit is only a policy.
///
/// A member goes onto ``members`` as soon as its key is read, with a `null` placeholder that
/// the value replaces once it is complete; so the key never has to be kept anywhere else while
/// a nested value is read, and the top member is always the one whose value comes next.
package struct JSONReader: ~Copyable {
  /// One open array or object. Trivial, so pushing and popping frames costs no reference
  /// counting.
  package struct Frame {
    package var isObject: Bool
    /// Whether some key occurs twice, so closing must merge members.
    package var hasDuplicates = false
    /// One bit per key read so far, chosen by its fingerprint: a key whose bit is clear is
    /// certainly new, which spares most keys the scan for duplicates.
    package var keyBits: UInt64 = 0
    /// Where this container's elements (or members) start on their stack.
    package var start: Int
    /// The offset of the opening bracket, for "unterminated" errors.
    package var openOffset: Int
  }

  /// Objects with more members than this look keys up in a hash set for duplicates.
  package static let linearScanLimit = 16
  /// The starting size of each of the parser's stacks, in bytes.
  private static let stackStartBytes = 1024

  package let input: UnsafeBufferPointer<UInt8>
  package let maximumDepth: Int
  package let rejectsDuplicateKeys: Bool
  /// Whether `//` and `/* */` comments and trailing commas are accepted (``JSONSyntax/jwcc``).
  /// Strict text never pays for it beyond one test of this flag where whitespace ends.
  package let allowsJWCC: Bool
  /// The offset of the next byte to read.
  package var position = 0
  // The stacks start at a kilobyte each and double as they fill. A kilobyte is about the
  // largest block glibc's per-thread cache hands out without its slower path: at 1-8 KB the
  // four allocations cost a 1 KB document's parse a sixth of its instructions
  // (docs/BENCHMARK-METHOD.md, "Fan-out").
  package var frames = MoveStack<Frame>(initialCapacity: JSONReader.stackStartBytes / MemoryLayout<Frame>.stride)
  package var elements = MoveStack<JSONValue>(initialCapacity: JSONReader.stackStartBytes / MemoryLayout<JSONValue>.stride)
  package var members = MoveStack<JSONObject.Member>(initialCapacity: JSONReader.stackStartBytes / MemoryLayout<JSONObject.Member>.stride)
  /// The fingerprint of each member's key, parallel to ``members``.
  package var fingerprints = MoveStack<UInt64>(initialCapacity: JSONReader.stackStartBytes / MemoryLayout<UInt64>.stride)
  /// The keys of open objects too large for a linear duplicate scan, by frame depth.
  package var largeObjectKeys: [Int: Set<KeyReference>] = [:]
  /// Keys already made into `String`s, so a key that repeats costs a lookup, not a new string.
  package var keyCache: JSONKeyCache
  /// Where strings with escapes are decoded.
  package var scratch: [UInt8] = []

  package init(input: UnsafeBufferPointer<UInt8>, options: JSONParser.Options, syntax: JSONSyntax = .strict) {
    self.input = input
    self.maximumDepth = options.maximumDepth
    self.rejectsDuplicateKeys = options.duplicateKeys == .reject
    self.allowsJWCC = syntax == .jwcc
    self.keyCache = JSONKeyCache(inputSize: input.count)
  }

  /// Reads the whole input as one document.
  package mutating func readDocument() throws(JSONParseError) -> JSONValue {
    if input.count >= 3, input[0] == 0xEF, input[1] == 0xBB, input[2] == 0xBF {
      throw error(.byteOrderMark, "byte order mark (U+FEFF) before the document", at: 0)
    }
    skipWhitespace()
    guard position < input.count else {
      throw error(.emptyDocument, "empty document", at: position)
    }
    let value = try readValue()
    skipWhitespace()
    if position < input.count {
      throw syntaxError(at: position)
        ?? error(.trailingCharacters, "trailing characters after the document", at: position)
    }
    return value
  }

  /// Reads the one value that starts at `start` (no whitespace before it) and returns it with
  /// the offset just after it; what follows is not looked at. For parsing a part of a text
  /// whose rest is known (see `JSONDocumentLayout`).
  package mutating func readValue(at start: Int) throws(JSONParseError) -> (value: JSONValue, end: Int) {
    position = start
    let value = try readValue()
    return (value, position)
  }

  /// Reads one value, with everything nested in it, starting at a non-whitespace byte.
  private mutating func readValue() throws(JSONParseError) -> JSONValue {
    nextValue: while true {
      guard position < input.count else { throw endOfInput() }
      var value: JSONValue
      switch input[position] {
      case UInt8(ascii: "\""):
        value = .string(try readString())
      case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
        value = .number(try readNumber())
      case UInt8(ascii: "{"):
        try checkDepth()
        let open = position
        position += 1
        skipWhitespace()
        if position < input.count, input[position] == UInt8(ascii: "}") {
          position += 1
          value = .object(JSONObject())
        } else {
          frames.push(Frame(isObject: true, start: members.count, openOffset: open))
          try readKey()
          continue nextValue
        }
      case UInt8(ascii: "["):
        try checkDepth()
        let open = position
        position += 1
        skipWhitespace()
        if position < input.count, input[position] == UInt8(ascii: "]") {
          position += 1
          value = .array([])
        } else {
          frames.push(Frame(isObject: false, start: elements.count, openOffset: open))
          continue nextValue
        }
      case UInt8(ascii: "t"):
        try readLiteral(0x6575_7274, length: 4)  // "true", little-endian
        value = .bool(true)
      case UInt8(ascii: "f"):
        try readLiteral(0x6573_6C61, length: 5, skippingFirst: true)  // "alse"
        value = .bool(false)
      case UInt8(ascii: "n"):
        try readLiteral(0x6C6C_756E, length: 4)  // "null"
        value = .null
      default:
        guard allowsJWCC, input[position] == UInt8(ascii: "]"), frames.count > 0, !frames.top.isObject else {
          throw unexpectedCharacter(at: position)
        }
        // JWCC: a trailing comma before the closing bracket (`[]` and `[,]` never get here:
        // the first is read at the opening bracket, the second fails at its comma).
        position += 1
        let frame = frames.pop()
        value = .array(elements.popArray(from: frame.start))
      }

      // A value is complete: add it to its container, and close every container that ends.
      while frames.count > 0 {
        skipWhitespace()
        if frames.top.isObject {
          members.top.value = consume value
          guard position < input.count else { throw endOfInput() }
          switch input[position] {
          case UInt8(ascii: ","):
            position += 1
            skipWhitespace()
            if allowsJWCC, position < input.count, input[position] == UInt8(ascii: "}") {
              // JWCC: a trailing comma before the closing brace.
              position += 1
              let frame = frames.pop()
              value = .object(closeObject(frame))
              continue
            }
            try readKey()
            continue nextValue
          case UInt8(ascii: "}"):
            position += 1
            let frame = frames.pop()
            value = .object(closeObject(frame))
          default:
            throw unexpectedCharacter(at: position)
          }
        } else {
          elements.push(consume value)
          guard position < input.count else { throw endOfInput() }
          switch input[position] {
          case UInt8(ascii: ","):
            position += 1
            skipWhitespace()
            continue nextValue
          case UInt8(ascii: "]"):
            position += 1
            let frame = frames.pop()
            value = .array(elements.popArray(from: frame.start))
          default:
            throw unexpectedCharacter(at: position)
          }
        }
      }
      return value
    }
  }

  /// Moves the innermost object's members into a `JSONObject`, merging repeated keys (the last
  /// value at the first position) when there are any.
  private mutating func closeObject(_ frame: Frame) -> JSONObject {
    if !largeObjectKeys.isEmpty { largeObjectKeys[frames.count] = nil }
    let keyFingerprints = frame.hasDuplicates ? fingerprints.popArray(from: frame.start) : []
    fingerprints.removeAll(from: frame.start)
    let objectMembers = members.popArray(from: frame.start)
    guard frame.hasDuplicates else { return JSONObject(uniqueMembers: objectMembers) }
    var merged: [JSONObject.Member] = []
    var positions: [KeyReference: Int] = [:]
    for (member, fingerprint) in zip(objectMembers, keyFingerprints) {
      let reference = KeyReference(key: member.key, fingerprint: fingerprint)
      if let position = positions[reference] {
        merged[position].value = member.value
      } else {
        positions[reference] = merged.count
        merged.append(member)
      }
    }
    return JSONObject(uniqueMembers: merged)
  }

  private func checkDepth() throws(JSONParseError) {
    if frames.count >= maximumDepth {
      throw error(.nestingTooDeep, "nesting deeper than \(maximumDepth) levels", at: position)
    }
  }

  /// Reads `true`, `false` or `null` at ``position``: `word` is the four bytes after
  /// ``position`` (after its first byte when `skippingFirst`) in memory order.
  @inline(__always)
  private mutating func readLiteral(_ word: UInt32, length: Int, skippingFirst: Bool = false) throws(JSONParseError) {
    let wordStart = skippingFirst ? position + 1 : position
    if wordStart + 4 <= input.count,
      UnsafeRawPointer(input.baseAddress! + wordStart).loadUnaligned(as: UInt32.self) == UInt32(littleEndian: word)
    {
      position += length
      return
    }
    throw literalError(word, length: length, skippingFirst: skippingFirst)
  }

  /// Where and why a literal does not match: the first wrong byte, or the end of the input.
  private func literalError(_ word: UInt32, length: Int, skippingFirst: Bool) -> JSONParseError {
    var expected: [UInt8] = skippingFirst ? [input[position]] : []
    for shift in stride(from: 0, to: 32, by: 8) { expected.append(UInt8(truncatingIfNeeded: word >> shift)) }
    for index in 0..<length {
      let offset = position + index
      guard offset < input.count else { return endOfInput() }
      guard input[offset] == expected[index] else { return unexpectedCharacter(at: offset) }
    }
    return unexpectedCharacter(at: position)
  }

  /// Moves ``position`` past whitespace and, in JWCC, past comments. An unterminated block
  /// comment is left in place: the byte it starts with is then unexpected where it stands,
  /// and ``syntaxError(at:)`` names it.
  @inline(__always)
  package mutating func skipWhitespace() {
    skipSpaces()
    // Checked here, inline: most calls stand before a value, not a comment.
    if allowsJWCC, position < input.count, input[position] == UInt8(ascii: "/") { skipComments() }
  }

  /// Moves ``position`` past comments and the whitespace after each.
  private mutating func skipComments() {
    while position + 1 < input.count, input[position] == UInt8(ascii: "/") {
      guard let end = JSONReader.commentEnd(in: input, at: position) else { return }
      position = end
      skipSpaces()
    }
  }

  /// The offset just after the comment that starts at `start` (a `/`): a line comment ends
  /// before its line feed (or at the end of the input), a block comment after its `*/`. `nil`
  /// when no comment starts there, or a block comment never ends.
  package static func commentEnd(in input: UnsafeBufferPointer<UInt8>, at start: Int) -> Int? {
    guard start + 1 < input.count, input[start] == UInt8(ascii: "/") else { return nil }
    var index = start + 2
    switch input[start + 1] {
    case UInt8(ascii: "/"):
      while index < input.count, input[index] != 0x0A { index += 1 }
      return index
    case UInt8(ascii: "*"):
      while index + 1 < input.count {
        if input[index] == UInt8(ascii: "*"), input[index + 1] == UInt8(ascii: "/") { return index + 2 }
        index += 1
      }
      return nil
    default:
      return nil
    }
  }

  /// Moves ``position`` past spaces, tabs, line feeds and carriage returns. Pretty text is
  /// mostly indentation, so spaces are passed eight at a time.
  @inline(__always)
  package mutating func skipSpaces() {
    guard position < input.count, input[position] <= 0x20 else { return }
    let raw = UnsafeRawPointer(input.baseAddress!)
    while position + 8 <= input.count {
      let notSpaces = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: position, as: UInt64.self))
        ^ 0x2020_2020_2020_2020
      guard notSpaces != 0 else {
        position += 8
        continue
      }
      position += notSpaces.trailingZeroBitCount >> 3
      let byte = input[position]
      guard byte == 0x0A || byte == 0x0D || byte == 0x09 else { return }
      position += 1
    }
    while position < input.count {
      let byte = input[position]
      guard byte <= 0x20, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 else { return }
      position += 1
    }
  }
}
