/// The engine behind ``JSONParser``: one pass over a UTF-8 buffer, no recursion.
///
/// Open arrays and objects live on ``frames``; the finished elements of every open array sit
/// on one ``elements`` stack and the finished members of every open object on one ``members``
/// stack, and a closing bracket moves its container's share out into the new value. Nesting
/// therefore costs heap, never thread stack, and the depth limit is only a policy.
struct JSONReader: ~Copyable {
  /// One open array or object.
  struct Frame {
    var isObject: Bool
    /// Where this container's elements (or members) start on their stack.
    var start: Int
    /// The offset of the opening bracket, for "unterminated" errors.
    var openOffset: Int
    /// The key under which this container goes into the enclosing object, if that is one.
    var keyInParent: String
    var keyFingerprintInParent: UInt64
    /// Whether some key occurs twice, so closing must merge members.
    var hasDuplicates = false
    /// Keys seen so far, once the object is too large for a linear scan.
    var keyIndex: Set<KeyReference>? = nil
  }

  /// Objects with more members than this look keys up in a hash set for duplicates.
  static let linearScanLimit = 16

  let input: UnsafeBufferPointer<UInt8>
  let maximumDepth: Int
  let rejectsDuplicateKeys: Bool
  /// The offset of the next byte to read.
  var position = 0
  var frames: [Frame] = []
  var elements = MoveStack<JSONValue>(initialCapacity: 256)
  var members = MoveStack<JSONObject.Member>(initialCapacity: 256)
  /// The fingerprint of each member's key, parallel to ``members``.
  var fingerprints = MoveStack<UInt64>(initialCapacity: 256)
  /// Where strings with escapes are decoded.
  var scratch: [UInt8] = []

  init(input: UnsafeBufferPointer<UInt8>, options: JSONParser.Options) {
    self.input = input
    self.maximumDepth = options.maximumDepth
    self.rejectsDuplicateKeys = options.duplicateKeys == .reject
  }

  /// Reads the whole input as one document.
  mutating func readDocument() throws(JSONParseError) -> JSONValue {
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
      throw error(.trailingCharacters, "trailing characters after the document", at: position)
    }
    return value
  }

  /// Reads one value, with everything nested in it, starting at a non-whitespace byte.
  private mutating func readValue() throws(JSONParseError) -> JSONValue {
    // The key of the value being read, while the innermost open container is an object.
    var key = ""
    var keyFingerprint: UInt64 = 0
    nextValue: while true {
      guard position < input.count else { throw endOfInput() }
      var value: JSONValue
      switch input[position] {
      case UInt8(ascii: "{"):
        try checkDepth()
        let open = position
        position += 1
        skipWhitespace()
        if position < input.count, input[position] == UInt8(ascii: "}") {
          position += 1
          value = .object(JSONObject())
        } else {
          frames.append(Frame(isObject: true, start: members.count, openOffset: open,
                              keyInParent: key, keyFingerprintInParent: keyFingerprint))
          try readKey(&key, &keyFingerprint)
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
          frames.append(Frame(isObject: false, start: elements.count, openOffset: open,
                              keyInParent: key, keyFingerprintInParent: keyFingerprint))
          continue nextValue
        }
      case UInt8(ascii: "\""):
        value = .string(try readString())
      case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
        value = .number(try readNumber())
      case UInt8(ascii: "t"):
        try readLiteral("true")
        value = .bool(true)
      case UInt8(ascii: "f"):
        try readLiteral("false")
        value = .bool(false)
      case UInt8(ascii: "n"):
        try readLiteral("null")
        value = .null
      default:
        throw unexpectedCharacter(at: position)
      }

      // A value is complete: add it to its container, and close every container that ends.
      while let top = frames.indices.last {
        skipWhitespace()
        if frames[top].isObject {
          members.push(JSONObject.Member(key: key, value: value))
          fingerprints.push(keyFingerprint)
          guard position < input.count else { throw endOfInput() }
          switch input[position] {
          case UInt8(ascii: ","):
            position += 1
            skipWhitespace()
            try readKey(&key, &keyFingerprint)
            continue nextValue
          case UInt8(ascii: "}"):
            position += 1
            let frame = frames.removeLast()
            value = .object(closeObject(frame))
            key = frame.keyInParent
            keyFingerprint = frame.keyFingerprintInParent
          default:
            throw unexpectedCharacter(at: position)
          }
        } else {
          elements.push(value)
          guard position < input.count else { throw endOfInput() }
          switch input[position] {
          case UInt8(ascii: ","):
            position += 1
            skipWhitespace()
            continue nextValue
          case UInt8(ascii: "]"):
            position += 1
            let frame = frames.removeLast()
            value = .array(elements.popArray(from: frame.start))
            key = frame.keyInParent
            keyFingerprint = frame.keyFingerprintInParent
          default:
            throw unexpectedCharacter(at: position)
          }
        }
      }
      return value
    }
  }

  /// Reads `"key"` and the colon after it, leaving ``position`` at the value, and checks the
  /// key against the keys already in the innermost object.
  private mutating func readKey(_ key: inout String, _ fingerprint: inout UInt64) throws(JSONParseError) {
    guard position < input.count else { throw endOfInput() }
    guard input[position] == UInt8(ascii: "\"") else { throw unexpectedCharacter(at: position) }
    let keyOffset = position
    key = try readString()
    fingerprint = JSONReader.fingerprint(of: key)
    if try isDuplicate(key, fingerprint, keyOffset: keyOffset) {
      frames[frames.count - 1].hasDuplicates = true
    }
    skipWhitespace()
    guard position < input.count else { throw endOfInput() }
    guard input[position] == UInt8(ascii: ":") else { throw unexpectedCharacter(at: position) }
    position += 1
    skipWhitespace()
  }

  /// Whether the innermost object already has `key`; throws instead under the reject policy.
  /// A linear scan over fingerprints for small objects, a hash set for large ones.
  private mutating func isDuplicate(_ key: String, _ fingerprint: UInt64, keyOffset: Int) throws(JSONParseError) -> Bool {
    let top = frames.count - 1
    let start = frames[top].start
    let existing = members.count - start
    var found = false
    if existing <= JSONReader.linearScanLimit {
      var index = start
      while index < members.count {
        if fingerprints[index] == fingerprint, JSONReader.sameBytes(members[index].key, key) {
          found = true
          break
        }
        index += 1
      }
    } else {
      if frames[top].keyIndex == nil {
        var keyIndex = Set<KeyReference>(minimumCapacity: existing * 2)
        for index in start..<members.count {
          keyIndex.insert(KeyReference(key: members[index].key, fingerprint: fingerprints[index]))
        }
        frames[top].keyIndex = keyIndex
      }
      found = !frames[top].keyIndex!.insert(KeyReference(key: key, fingerprint: fingerprint)).inserted
    }
    if found && rejectsDuplicateKeys {
      throw error(.duplicateKey, "duplicate key \(JSONReader.quoted(key))", at: keyOffset)
    }
    return found
  }

  /// Moves the innermost object's members into a `JSONObject`, merging repeated keys (the last
  /// value at the first position) when there are any.
  private mutating func closeObject(_ frame: Frame) -> JSONObject {
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

  /// Reads `literal` (`true`, `false` or `null`) at ``position``.
  private mutating func readLiteral(_ literal: StaticString) throws(JSONParseError) {
    let expected = UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount)
    for index in 0..<expected.count {
      let offset = position + index
      guard offset < input.count else { throw endOfInput() }
      guard input[offset] == expected[index] else { throw unexpectedCharacter(at: offset) }
    }
    position += expected.count
  }

  @inline(__always)
  mutating func skipWhitespace() {
    while position < input.count {
      let byte = input[position]
      guard byte <= 0x20, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 else { return }
      position += 1
    }
  }
}

/// A key with its fingerprint, hashed by the fingerprint and compared by exact UTF-8 bytes
/// (Swift's `String ==` would also equate canonically equivalent keys, which JSON does not).
struct KeyReference: Hashable {
  var key: String
  var fingerprint: UInt64

  static func == (lhs: KeyReference, rhs: KeyReference) -> Bool {
    lhs.fingerprint == rhs.fingerprint && JSONReader.sameBytes(lhs.key, rhs.key)
  }

  func hash(into hasher: inout Hasher) {
    hasher.combine(fingerprint)
  }
}
