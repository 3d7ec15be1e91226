import CCSyncSystem

/// Strings, numbers, UTF-8 validation and error construction for ``JSONReader``.
extension JSONReader {
  /// Reads a string at ``position`` (its opening quote) and leaves ``position`` after the
  /// closing quote.
  ///
  /// The common string has no escape: it is scanned eight bytes at a time and becomes a
  /// `String` straight from the input bytes. Non-ASCII bytes are checked by
  /// `String(validating:)`, which rejects what RFC 3629 rejects; only when it fails does the
  /// reader look for the exact bad byte.
  package mutating func readString() throws(JSONParseError) -> String {
    let open = position
    var highBits: UInt64 = 0
    let end = scanString(from: open + 1, highBits: &highBits)
    guard end < input.count else { throw unterminatedString(at: open) }
    let byte = input[end]
    if byte == UInt8(ascii: "\"") {
      position = end + 1
      return try makeString(UnsafeBufferPointer(rebasing: input[(open + 1)..<end]), highBits: highBits, at: open + 1)
    }
    if byte == UInt8(ascii: "\\") {
      return try readEscapedString(open: open, escapeAt: end, highBits: highBits)
    }
    throw controlCharacter(at: end)
  }

  /// The offset of the first `"`, `\` or control character at or after `start` (or the end of
  /// the input), OR-ing every byte before it into `highBits`, whose bit 7 of any byte then
  /// says whether the run has non-ASCII bytes.
  @inline(__always)
  package func scanString(from start: Int, highBits: inout UInt64) -> Int {
    var index = start
    if input.count >= 8 {
      let raw = UnsafeRawPointer(input.baseAddress!)
      while index + 8 <= input.count {
        let word = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: index, as: UInt64.self))
        let found = JSONReader.specialBytes(in: word)
        if found != 0 {
          let passed = found.trailingZeroBitCount & ~7
          if passed > 0 { highBits |= word & (UInt64.max >> (64 - passed)) }
          return index + passed >> 3
        }
        highBits |= word
        index += 8
      }
    }
    while index < input.count {
      let byte = input[index]
      if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 { return index }
      highBits |= UInt64(byte)
      index += 1
    }
    return index
  }

  /// Bit 7 set in each byte of `word` (eight input bytes, little-endian) that is a quote, a
  /// backslash or below 0x20, the bytes a JSON string cannot hold as they are. Borrows can set
  /// it in bytes after such a byte, never before, so the lowest set bit is exact.
  @inline(__always)
  package static func specialBytes(in word: UInt64) -> UInt64 {
    let ones: UInt64 = 0x0101_0101_0101_0101
    let quote = word ^ (ones &* 0x22)
    let backslash = word ^ (ones &* 0x5C)
    let special = ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash) | ((word &- ones &* 0x20) & ~word)
    return special & (ones &* 0x80)
  }

  /// A `String` of `content`, which has no quote, backslash or control character; `highBits`
  /// comes from ``scanString(from:highBits:)``. `contentOffset` places a UTF-8 error.
  @inline(__always)
  package func makeString(_ content: UnsafeBufferPointer<UInt8>, highBits: UInt64, at contentOffset: Int) throws(JSONParseError) -> String {
    if highBits & 0x8080_8080_8080_8080 == 0 { return JSONReader.asciiString(content) }
    guard let string = String(validating: content, as: UTF8.self) else {
      throw invalidUTF8(from: contentOffset, to: contentOffset + content.count)
    }
    return string
  }

  /// A `String` of bytes known to be valid UTF-8, usually ASCII. Up to 15 bytes fit in a small
  /// string, built in place without the call into the runtime and the validation pass that
  /// `String(decoding:as:)` makes (ASCII needs none).
  @inline(__always)
  package static func asciiString(_ content: UnsafeBufferPointer<UInt8>) -> String {
    let count = content.count
    if count <= 15 {
      guard count > 0 else { return "" }
      return String(unsafeUninitializedCapacity: count) { buffer in
        buffer.baseAddress!.initialize(from: content.baseAddress!, count: count)
        return count
      }
    }
    return String(decoding: content, as: UTF8.self)
  }

  /// Finishes a string that has an escape at `escapeAt`, decoding it into ``scratch``.
  package mutating func readEscapedString(open: Int, escapeAt: Int, highBits: UInt64) throws(JSONParseError) -> String {
    scratch.removeAll(keepingCapacity: true)
    scratch.append(contentsOf: UnsafeBufferPointer(rebasing: input[(open + 1)..<escapeAt]))
    var highBits = highBits
    var index = escapeAt
    while true {
      guard index < input.count else { throw unterminatedString(at: open) }
      let byte = input[index]
      if byte == UInt8(ascii: "\"") { break }
      if byte == UInt8(ascii: "\\") {
        index = try decodeEscape(at: index, open: open)
        continue
      }
      if byte < 0x20 { throw controlCharacter(at: index) }
      // A run of plain bytes, copied in one go.
      let runStart = index
      index = scanString(from: index, highBits: &highBits)
      scratch.append(contentsOf: UnsafeBufferPointer(rebasing: input[runStart..<index]))
    }
    position = index + 1
    if highBits & 0x8080_8080_8080_8080 == 0 {
      return scratch.withUnsafeBufferPointer { JSONReader.asciiString($0) }
    }
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
  package mutating func readNumber() throws(JSONParseError) -> JSONNumber {
    let start = position
    guard let index = JSONNumber.numberEnd(in: input, from: start) else { throw invalidNumber(at: start) }
    position = index
    return JSONNumber(uncheckedText: JSONReader.asciiString(UnsafeBufferPointer(rebasing: input[start..<index])))
  }
}
