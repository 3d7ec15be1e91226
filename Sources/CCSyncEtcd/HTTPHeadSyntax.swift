import Glibc

/// The lines of an HTTP/1.1 response head, read as the bytes they are (RFC 9112): a head is
/// ASCII, and reading it through `String`'s characters (grapheme breaking on every index
/// step) cost more than the rest of an etcd call's client side together.
enum HTTPHeadSyntax {
  /// A status line's parts.
  struct StatusLine {
    /// Whether the version is `HTTP/1.1` (not `HTTP/1.0`).
    var isHTTP11: Bool
    /// The three-digit status code.
    var status: Int
    /// The reason phrase, empty when there is none.
    var reason: String
  }

  /// `HTTP/1.x SSS [REASON]`, or `nil` when `line` is not a status line.
  static func statusLine(_ line: ArraySlice<UInt8>) -> StatusLine? {
    guard let versionEnd = line.firstIndex(of: space) else { return nil }
    let version = line[..<versionEnd]
    guard version.starts(with: http1) else { return nil }
    let codeStart = versionEnd + 1
    let codeEnd = line[codeStart...].firstIndex(of: space) ?? line.endIndex
    let code = line[codeStart..<codeEnd]
    guard code.count == 3, code.allSatisfy(isDigit) else { return nil }
    let status = code.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
    let reason = codeEnd < line.endIndex ? String(decoding: line[(codeEnd + 1)...], as: UTF8.self) : ""
    return StatusLine(isHTTP11: version.count == 8 && version.last == UInt8(ascii: "1"), status: status, reason: reason)
  }

  /// `name: value`, the value without the blanks around it; `nil` when `line` has no colon,
  /// an empty name, or starts with a blank (an obsolete folded line).
  static func field(_ line: ArraySlice<UInt8>) -> HTTPHeader? {
    guard let (name, value) = fieldParts(line) else { return nil }
    return HTTPHeader(name: String(decoding: name, as: UTF8.self), value: String(decoding: value, as: UTF8.self))
  }

  /// ``field(_:)``'s name and value as the bytes of `line` they are, without making text.
  static func fieldParts(_ line: ArraySlice<UInt8>) -> (name: ArraySlice<UInt8>, value: ArraySlice<UInt8>)? {
    guard let colon = fieldColon(line) else { return nil }
    return (line[..<colon], trimmingBlanks(line[(colon + 1)...]))
  }

  /// The index of the colon that ends a field's name, or `nil` when `line` is not a field
  /// (``field(_:)``). Found by `memchr`: a head is read line by line on every call.
  static func fieldColon(_ line: ArraySlice<UInt8>) -> Int? {
    guard let first = line.first, !isBlank(first) else { return nil }
    let offset = line.withUnsafeBufferPointer { bytes -> Int? in
      guard let found = memchr(bytes.baseAddress!, Int32(UInt8(ascii: ":")), bytes.count) else { return nil }
      return bytes.baseAddress!.distance(to: found.assumingMemoryBound(to: UInt8.self))
    }
    guard let offset, offset > 0 else { return nil }
    return line.startIndex + offset
  }

  /// A chunk-size line's size (hexadecimal, up to an optional `;extension`), or `nil`.
  static func chunkSize(_ line: ArraySlice<UInt8>) -> Int? {
    let digits = trimmingBlanks(line[..<(line.firstIndex(of: UInt8(ascii: ";")) ?? line.endIndex)])
    guard !digits.isEmpty, digits.count <= 15 else { return nil }
    var size = 0
    for byte in digits {
      guard let digit = hexadecimalValue(byte) else { return nil }
      size = size * 16 + digit
    }
    return size
  }

  /// Whether the last of the comma-separated `codings` (a `Transfer-Encoding` value's bytes)
  /// is `chunked`.
  static func endsInChunked(_ codings: ArraySlice<UInt8>) -> Bool {
    let last = codings[(codings.lastIndex(of: UInt8(ascii: ",")).map { $0 + 1 } ?? codings.startIndex)...]
    return isLowercase(trimmingBlanks(last), ignoringCase: chunked)
  }

  /// A decimal field value of at most 15 digits (`Content-Length`), or `nil`.
  static func decimal(_ text: String) -> Int? {
    let digits = text.utf8
    guard !digits.isEmpty, digits.count <= 15, digits.allSatisfy(isDigit) else { return nil }
    return digits.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
  }

  /// `bytes` without leading and trailing spaces and tabs (HTTP's optional whitespace).
  static func trimmingBlanks(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
    guard let first = bytes.firstIndex(where: { !isBlank($0) }) else { return bytes[bytes.endIndex...] }
    let last = bytes.lastIndex(where: { !isBlank($0) })!
    return bytes[first...last]
  }

  /// Whether `text` is `other`, ASCII letters compared without regard to case (field names,
  /// `chunked`, `close`).
  static func equalIgnoringCase(_ text: some Collection<UInt8>, _ other: some Collection<UInt8>) -> Bool {
    text.count == other.count && zip(text, other).allSatisfy { lowercased($0) == lowercased($1) }
  }

  /// Whether a field value's `bytes` contain `wanted` (given in lower case), ASCII letters
  /// compared without regard to case.
  static func contains(_ bytes: ArraySlice<UInt8>, lowercaseWord wanted: [UInt8]) -> Bool {
    guard bytes.count >= wanted.count else { return false }
    return (0...(bytes.count - wanted.count)).contains { offset in
      wanted.indices.allSatisfy { lowercased(bytes[bytes.startIndex + offset + $0]) == wanted[$0] }
    }
  }

  /// Whether `text` is `lowercase`, ASCII letters compared without regard to case: the
  /// comparison of a field name with a name it may be, byte by byte.
  static func isLowercase(_ text: ArraySlice<UInt8>, ignoringCase lowercase: [UInt8]) -> Bool {
    guard text.count == lowercase.count else { return false }
    var index = text.startIndex
    for byte in lowercase {
      guard lowercased(text[index]) == byte else { return false }
      index += 1
    }
    return true
  }

  static let chunked = Array("chunked".utf8)
  static let http1 = Array("HTTP/1.".utf8)

  static let space = UInt8(ascii: " ")

  static func isBlank(_ byte: UInt8) -> Bool { byte == space || byte == UInt8(ascii: "\t") }

  static func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

  static func lowercased(_ byte: UInt8) -> UInt8 {
    byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte + 32 : byte
  }

  static func hexadecimalValue(_ byte: UInt8) -> Int? {
    if isDigit(byte) { return Int(byte - UInt8(ascii: "0")) }
    let lower = lowercased(byte)
    guard lower >= UInt8(ascii: "a") && lower <= UInt8(ascii: "f") else { return nil }
    return Int(lower - UInt8(ascii: "a")) + 10
  }
}
