/// Strings, numbers, UTF-8 validation and error construction for ``JSONReader``.
extension JSONReader {
  /// Reads a string at ``position`` (its opening quote) and leaves ``position`` after the
  /// closing quote.
  ///
  /// The common string has no escape: it is scanned once and becomes a `String` straight from
  /// the input bytes. Non-ASCII bytes are checked by `String(validating:)`, which rejects what
  /// RFC 3629 rejects; only when it fails does the reader look for the exact bad byte.
  mutating func readString() throws(JSONParseError) -> String {
    let open = position
    var index = open + 1
    var highBits: UInt8 = 0
    while index < input.count {
      let byte = input[index]
      if byte == UInt8(ascii: "\"") { break }
      if byte == UInt8(ascii: "\\") {
        return try readEscapedString(open: open, escapeAt: index, highBits: highBits)
      }
      if byte < 0x20 { throw controlCharacter(at: index) }
      highBits |= byte
      index += 1
    }
    guard index < input.count else {
      throw unterminatedString(at: open)
    }
    position = index + 1
    let content = UnsafeBufferPointer(rebasing: input[(open + 1)..<index])
    if highBits < 0x80 { return String(decoding: content, as: UTF8.self) }
    guard let string = String(validating: content, as: UTF8.self) else {
      throw invalidUTF8(from: open + 1, to: index)
    }
    return string
  }

  /// Finishes a string that has an escape at `escapeAt`, decoding it into ``scratch``.
  private mutating func readEscapedString(open: Int, escapeAt: Int, highBits: UInt8) throws(JSONParseError) -> String {
    scratch.removeAll(keepingCapacity: true)
    scratch.append(contentsOf: UnsafeBufferPointer(rebasing: input[(open + 1)..<escapeAt]))
    var highBits = highBits
    var index = escapeAt
    while true {
      guard index < input.count else {
        throw unterminatedString(at: open)
      }
      let byte = input[index]
      if byte == UInt8(ascii: "\"") { break }
      if byte == UInt8(ascii: "\\") {
        index = try decodeEscape(at: index, open: open)
        continue
      }
      // A run of plain bytes, copied in one go.
      let runStart = index
      while index < input.count {
        let byte = input[index]
        if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { break }
        if byte < 0x20 { throw controlCharacter(at: index) }
        highBits |= byte
        index += 1
      }
      scratch.append(contentsOf: UnsafeBufferPointer(rebasing: input[runStart..<index]))
    }
    position = index + 1
    if highBits < 0x80 { return String(decoding: scratch, as: UTF8.self) }
    guard let string = String(validating: scratch, as: UTF8.self) else {
      // Escapes decode to valid UTF-8, so the fault is in the raw bytes of the input.
      throw invalidUTF8(from: open + 1, to: index)
    }
    return string
  }

  /// Decodes the escape at `start` (a backslash) into ``scratch``; returns the offset after it.
  /// `open` is the string's opening quote, named when the input ends inside the escape.
  private mutating func decodeEscape(at start: Int, open: Int) throws(JSONParseError) -> Int {
    guard start + 1 < input.count else { throw unterminatedString(at: open) }
    let decoded: UInt8
    switch input[start + 1] {
    case UInt8(ascii: "\""): decoded = UInt8(ascii: "\"")
    case UInt8(ascii: "\\"): decoded = UInt8(ascii: "\\")
    case UInt8(ascii: "/"): decoded = UInt8(ascii: "/")
    case UInt8(ascii: "b"): decoded = 0x08
    case UInt8(ascii: "f"): decoded = 0x0C
    case UInt8(ascii: "n"): decoded = 0x0A
    case UInt8(ascii: "r"): decoded = 0x0D
    case UInt8(ascii: "t"): decoded = 0x09
    case UInt8(ascii: "u"):
      return try decodeUnicodeEscape(at: start, open: open)
    default:
      throw invalidEscape(at: start)
    }
    scratch.append(decoded)
    return start + 2
  }

  /// Decodes `\uXXXX`, or a `\uD8xx\uDCxx` surrogate pair, at `start`.
  private mutating func decodeUnicodeEscape(at start: Int, open: Int) throws(JSONParseError) -> Int {
    let first = try hexQuad(at: start, open: open)
    var scalarValue = UInt32(first)
    var end = start + 6
    if first >= 0xDC00 && first <= 0xDFFF {
      throw loneSurrogate(first, at: start)
    }
    if first >= 0xD800 && first <= 0xDBFF {
      guard end < input.count else { throw unterminatedString(at: open) }
      guard input[end] == UInt8(ascii: "\\") else { throw loneSurrogate(first, at: start) }
      guard end + 1 < input.count else { throw unterminatedString(at: open) }
      guard input[end + 1] == UInt8(ascii: "u") else { throw loneSurrogate(first, at: start) }
      let second = try hexQuad(at: end, open: open)
      guard second >= 0xDC00 && second <= 0xDFFF else { throw loneSurrogate(first, at: start) }
      scalarValue = 0x10000 + ((UInt32(first) - 0xD800) << 10) + (UInt32(second) - 0xDC00)
      end += 6
    }
    // Never fails: surrogates were excluded above and the value is at most U+10FFFF.
    let scalar = Unicode.Scalar(scalarValue)!
    for unit in UTF8.encode(scalar)! { scratch.append(unit) }
    return end
  }

  /// The value of the four hex digits after `\u` at `start`.
  private func hexQuad(at start: Int, open: Int) throws(JSONParseError) -> UInt16 {
    var value: UInt16 = 0
    for offset in (start + 2)..<(start + 6) {
      guard offset < input.count else { throw unterminatedString(at: open) }
      let byte = input[offset]
      let digit: UInt8
      switch byte {
      case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
      case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
      case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
      default: throw invalidEscape(at: start)
      }
      value = value << 4 | UInt16(digit)
    }
    return value
  }

  /// Reads a number at ``position``, checking the RFC 8259 grammar, and keeps its text.
  mutating func readNumber() throws(JSONParseError) -> JSONNumber {
    let start = position
    var index = start
    @inline(__always) func isDigit(_ offset: Int) -> Bool {
      offset < input.count && input[offset] &- UInt8(ascii: "0") < 10
    }
    if input[index] == UInt8(ascii: "-") { index += 1 }
    guard isDigit(index) else { throw invalidNumber(at: start) }
    if input[index] == UInt8(ascii: "0") {
      index += 1
      if isDigit(index) { throw invalidNumber(at: start) }
    } else {
      while isDigit(index) { index += 1 }
    }
    if index < input.count, input[index] == UInt8(ascii: ".") {
      index += 1
      guard isDigit(index) else { throw invalidNumber(at: start) }
      while isDigit(index) { index += 1 }
    }
    if index < input.count, input[index] | 0x20 == UInt8(ascii: "e") {
      index += 1
      if index < input.count, input[index] == UInt8(ascii: "+") || input[index] == UInt8(ascii: "-") {
        index += 1
      }
      guard isDigit(index) else { throw invalidNumber(at: start) }
      while isDigit(index) { index += 1 }
    }
    position = index
    return JSONNumber(uncheckedText: String(decoding: UnsafeBufferPointer(rebasing: input[start..<index]), as: UTF8.self))
  }

  // MARK: Keys

  /// A 64-bit hash of a key's UTF-8 bytes, so that most key comparisons are one integer
  /// comparison.
  static func fingerprint(of key: String) -> UInt64 {
    var key = key
    return key.withUTF8 { bytes in
      var hash: UInt64 = 0xCBF2_9CE4_8422_2325 ^ UInt64(bytes.count)
      let raw = UnsafeRawBufferPointer(bytes)
      var index = 0
      while index + 8 <= bytes.count {
        hash = (hash ^ raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)) &* 0x0000_0100_0000_01B3
        hash ^= hash >> 29
        index += 8
      }
      var tail: UInt64 = 0
      while index < bytes.count {
        tail = tail << 8 | UInt64(bytes[index])
        index += 1
      }
      hash = (hash ^ tail) &* 0x9E37_79B9_7F4A_7C15
      return hash ^ (hash >> 32)
    }
  }

  /// Whether two keys have the same UTF-8 bytes.
  static func sameBytes(_ lhs: String, _ rhs: String) -> Bool {
    lhs.utf8.count == rhs.utf8.count && lhs.utf8.elementsEqual(rhs.utf8)
  }

  /// A key as messages show it: as a JSON string, shortened when long.
  static func quoted(_ key: String) -> String {
    guard key.unicodeScalars.count > 40 else { return JSONValue.string(key).formatted(.compact) }
    let shown = JSONValue.string(String(key.unicodeScalars.prefix(40))).formatted(.compact)
    return shown.dropLast() + "...\""
  }
}
