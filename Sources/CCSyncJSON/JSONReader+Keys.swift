import CCSyncSystem

/// Object keys for ``JSONReader``: reading them (through the key cache), fingerprints, and
/// duplicate detection.
extension JSONReader {
  /// Reads `"key"` and the colon after it, leaving ``position`` at the value; checks the key
  /// against the keys already in the innermost object and pushes its member, with a `null`
  /// placeholder for the value.
  package mutating func readKey() throws(JSONParseError) {
    guard position < input.count else { throw endOfInput() }
    guard input[position] == UInt8(ascii: "\"") else { throw unexpectedCharacter(at: position) }
    let keyOffset = position
    let (key, fingerprint) = try readKeyString()
    // Most keys are certainly new: their fingerprint's bit is still clear in the object.
    let bit: UInt64 = 1 << (fingerprint >> 58)
    let seen = frames.top.keyBits & bit != 0
    frames.top.keyBits |= bit
    if seen || members.count - frames.top.start > JSONReader.linearScanLimit,
      try isDuplicate(key, fingerprint, keyOffset: keyOffset)
    {
      frames.top.hasDuplicates = true
    }
    members.push(JSONObject.Member(key: key, value: .null))
    fingerprints.push(fingerprint)
    skipWhitespace()
    guard position < input.count else { throw endOfInput() }
    guard input[position] == UInt8(ascii: ":") else { throw unexpectedCharacter(at: position) }
    position += 1
    skipWhitespace()
  }

  /// Reads the key string at ``position`` and its fingerprint. A key without escapes that was
  /// seen before comes from ``keyCache``: configuration files repeat the same few dozen keys.
  @inline(__always)
  private mutating func readKeyString() throws(JSONParseError) -> (String, UInt64) {
    let open = position
    let scan = scanKey(from: open + 1)
    guard scan.end < input.count else { throw unterminatedString(at: open) }
    let byte = input[scan.end]
    if byte == UInt8(ascii: "\"") {
      let content = UnsafeBufferPointer(rebasing: input[(open + 1)..<scan.end])
      position = scan.end + 1
      if let key = keyCache.key(fingerprint: scan.fingerprint, content: content, in: input) {
        return (key, scan.fingerprint)
      }
      let key = try makeString(content, highBits: scan.highBits, at: open + 1)
      keyCache.insert(key, fingerprint: scan.fingerprint, content: content, in: input)
      return (key, scan.fingerprint)
    }
    if byte == UInt8(ascii: "\\") {
      let key = try readEscapedString(open: open, escapeAt: scan.end, highBits: scan.highBits)
      let fingerprint = scratch.withUnsafeBufferPointer { JSONReader.fingerprint(of: $0) }
      return (key, fingerprint)
    }
    throw controlCharacter(at: scan.end)
  }

  /// ``scanString(from:highBits:)`` for a key, computing the fingerprint of the bytes it
  /// passes on the way: the same words it loads to look for the closing quote are hashed,
  /// so a key costs one pass. When the scan stops at a quote, `fingerprint` is exactly
  /// ``fingerprint(of:)`` of the key's bytes.
  @inline(__always)
  private func scanKey(from start: Int) -> (end: Int, highBits: UInt64, fingerprint: UInt64) {
    var index = start
    var highBits: UInt64 = 0
    var hash = JSONReader.fingerprintSeed
    let raw = UnsafeRawPointer(input.baseAddress!)
    while index + 8 <= input.count {
      let word = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: index, as: UInt64.self))
      let found = JSONReader.specialBytes(in: word)
      if found != 0 {
        let passed = found.trailingZeroBitCount & ~7
        let tail = passed == 0 ? 0 : word & (UInt64.max >> (64 - passed))
        highBits |= tail
        let end = index + passed >> 3
        return (end, highBits, JSONReader.finishFingerprint(hash, tail: tail, count: end - start))
      }
      highBits |= word
      hash = JSONReader.addToFingerprint(hash, word)
      index += 8
    }
    // The last few bytes of the input: gather the tail a byte at a time.
    var tail: UInt64 = 0
    var shift: UInt64 = 0
    while index < input.count {
      let byte = input[index]
      if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 { break }
      tail |= UInt64(byte) << shift
      shift += 8
      index += 1
    }
    highBits |= tail
    return (index, highBits, JSONReader.finishFingerprint(hash, tail: tail, count: index - start))
  }

  /// Whether the innermost object already has `key`; throws instead under the reject policy.
  /// A linear scan over fingerprints for small objects, a hash set for large ones. Not called
  /// for a small object's key whose bit in ``Frame/keyBits`` was clear.
  private mutating func isDuplicate(_ key: String, _ fingerprint: UInt64, keyOffset: Int) throws(JSONParseError) -> Bool {
    let start = frames.top.start
    let existing = members.count - start
    var found = false
    if existing <= JSONReader.linearScanLimit {
      var index = start
      while index < members.count {
        if fingerprints[index] == fingerprint, members[index].key.hasSameBytes(as: key) {
          found = true
          break
        }
        index += 1
      }
    } else {
      let depth = frames.count - 1
      if largeObjectKeys[depth] == nil {
        var keyIndex = Set<KeyReference>(minimumCapacity: existing * 2)
        for index in start..<members.count {
          keyIndex.insert(KeyReference(key: members[index].key, fingerprint: fingerprints[index]))
        }
        largeObjectKeys[depth] = keyIndex
      }
      found = !largeObjectKeys[depth]!.insert(KeyReference(key: key, fingerprint: fingerprint)).inserted
    }
    if found && rejectsDuplicateKeys {
      throw error(.duplicateKey, "duplicate key \(JSONReader.quoted(key))", at: keyOffset)
    }
    return found
  }

  /// A 64-bit hash of a key's UTF-8 bytes, so that most key comparisons are one integer
  /// comparison: each full eight-byte word in turn, then the rest as one zero-padded
  /// little-endian word, then the length.
  package static func fingerprint(of bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
    var hash = fingerprintSeed
    guard let base = bytes.baseAddress else { return finishFingerprint(hash, tail: 0, count: 0) }
    let raw = UnsafeRawPointer(base)
    var index = 0
    while index + 8 <= bytes.count {
      hash = addToFingerprint(hash, UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)))
      index += 8
    }
    var tail: UInt64 = 0
    var shift: UInt64 = 0
    while index < bytes.count {
      tail |= UInt64(bytes[index]) << shift
      shift += 8
      index += 1
    }
    return finishFingerprint(hash, tail: tail, count: bytes.count)
  }

  package static let fingerprintSeed: UInt64 = 0xCBF2_9CE4_8422_2325

  @inline(__always)
  package static func addToFingerprint(_ hash: UInt64, _ word: UInt64) -> UInt64 {
    let mixed = (hash ^ word) &* 0x0000_0100_0000_01B3
    return mixed ^ (mixed >> 29)
  }

  @inline(__always)
  package static func finishFingerprint(_ hash: UInt64, tail: UInt64, count: Int) -> UInt64 {
    let mixed = (hash ^ tail ^ UInt64(truncatingIfNeeded: count) &* 0x9E37_79B9) &* 0x9E37_79B9_7F4A_7C15
    return mixed ^ (mixed >> 32)
  }

  /// A key as messages show it: as a JSON string, shortened when long.
  package static func quoted(_ key: String) -> String {
    guard key.unicodeScalars.count > 40 else { return JSONValue.string(key).formatted(.compact) }
    let shown = JSONValue.string(String(key.unicodeScalars.prefix(40))).formatted(.compact)
    return shown.dropLast() + "...\""
  }
}

/// A key with its fingerprint, hashed by the fingerprint and compared by exact UTF-8 bytes
/// (Swift's `String ==` would also equate canonically equivalent keys, which JSON does not).
package struct KeyReference: Hashable {
  package var key: String
  package var fingerprint: UInt64

  package static func == (lhs: KeyReference, rhs: KeyReference) -> Bool {
    lhs.fingerprint == rhs.fingerprint && lhs.key.hasSameBytes(as: rhs.key)
  }

  package func hash(into hasher: inout Hasher) {
    hasher.combine(fingerprint)
  }
}
