extension JSONTextEncoderImpl {
  /// A key written in an open object: the place of its quoted, escaped text in the output,
  /// and its ``JSONKeyFilter`` bit (`nil` when it has none).
  struct WrittenKey {
    let start: Int
    let end: Int
    let bit: UInt64?
  }

  /// Remembers `key`, just written as a member of the object at `position`, or refuses it
  /// when the object has it already: the tree would replace that member's value in place,
  /// which text already written cannot do.
  /// - Throws: ``Abandon`` for a key the object has.
  @inline(__always)
  func recordKey(_ key: WrittenKey, in position: Int) throws {
    if frames[position].keyFilter.mayContain(bit: key.bit) {
      for index in frames[position].firstKey..<writtenKeys.count where isSameKey(writtenKeys[index], key) {
        throw Abandon()
      }
    }
    frames[position].keyFilter.insert(bit: key.bit)
    writtenKeys.push(key)
  }

  /// Whether two written keys are equal as `String`s, that is canonically equivalent.
  ///
  /// The printer's escaping is one-to-one, so equal texts are equal keys, and keys of ASCII
  /// alone are equal only when their texts are. Keys with other bytes may be equal with
  /// different texts (`é` as one scalar or as `e` and a combining accent): those are read
  /// back as strings and compared.
  private func isSameKey(_ earlier: WrittenKey, _ key: WrittenKey) -> Bool {
    if let earlierBit = earlier.bit, let bit = key.bit, earlierBit != bit { return false }
    return printer.withWrittenBytes(0..<printer.count) { output in
      let earlierText = UnsafeBufferPointer(rebasing: output[earlier.start..<earlier.end])
      let text = UnsafeBufferPointer(rebasing: output[key.start..<key.end])
      if earlierText.count == text.count, JSONKeyCache.equalBytes(earlierText.baseAddress!, text.baseAddress, text.count) {
        return true
      }
      if Self.isASCII(earlierText) && Self.isASCII(text) { return false }
      return Self.key(quoted: earlierText) == Self.key(quoted: text)
    }
  }

  /// Whether `text` (a key's text, never empty: it has its quotes) is ASCII alone; eight
  /// bytes at a time.
  private static func isASCII(_ text: UnsafeBufferPointer<UInt8>) -> Bool {
    let raw = UnsafeRawPointer(text.baseAddress!)
    var index = 0
    while index + 8 <= text.count {
      if raw.loadUnaligned(fromByteOffset: index, as: UInt64.self) & 0x8080_8080_8080_8080 != 0 { return false }
      index += 8
    }
    while index < text.count {
      if text[index] >= 0x80 { return false }
      index += 1
    }
    return true
  }

  /// The key whose quoted text the printer wrote as `text` (`nil`, which makes two keys
  /// count as the same and hands the value to the tree, cannot happen for the printer's text).
  private static func key(quoted text: UnsafeBufferPointer<UInt8>) -> String? {
    guard case .string(let key)? = try? JSONValue(parsing: UnsafeRawBufferPointer(text)) else { return nil }
    return key
  }
}
