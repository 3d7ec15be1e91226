import CCSyncJSON
import CCSyncSystem
import Glibc

/// A cursor over the bytes of one gateway reply that reads only the members a decoder asks
/// for and skips the rest, so that decoding a reply builds no `JSONValue` tree: a key is
/// compared in place, an int64 is read from its digits, a `bytes` field is decoded from
/// base64 straight into its final array.
///
/// It checks the syntax of what it reads and the nesting of what it skips, and never reads
/// past the end: truncated or malformed input throws a ``MalformedReply`` naming the byte
/// offset, with ``MalformedReply/isSyntax`` set. Not a general JSON reader: a key written
/// with escapes is compared as written (etcd's gateway writes none), a skipped number is
/// checked only for its characters, and a string is checked for control characters only
/// where it is read as text (a base64 string that holds one does not decode).
struct EtcdReplyScanner {
  /// The reply.
  let bytes: UnsafeBufferPointer<UInt8>
  /// The offset of the next byte to read.
  private(set) var position = 0

  /// A scanner at the start of `bytes`.
  init(_ bytes: UnsafeBufferPointer<UInt8>) {
    self.bytes = bytes
  }

  /// A syntax error at `offset`: what was expected, and what is there instead.
  func syntaxError(_ expected: String, at offset: Int? = nil) -> MalformedReply {
    let offset = offset ?? position
    guard offset < bytes.count else {
      return MalformedReply(detail: "the reply ends at byte \(offset) where \(expected) should follow", isSyntax: true)
    }
    let found = String(decoding: UnsafeBufferPointer(rebasing: bytes[offset..<min(offset + 16, bytes.count)]), as: UTF8.self)
    return MalformedReply(detail: "expected \(expected) at byte \(offset), found '\(found)'", isSyntax: true)
  }

  /// Skips spaces, tabs and line breaks.
  mutating func skipWhitespace() {
    while position < bytes.count {
      switch bytes[position] {
      case 0x20, 0x0a, 0x0d, 0x09: position += 1
      default: return
      }
    }
  }

  /// The next byte after whitespace, not consumed.
  mutating func peek(_ expected: String) throws(MalformedReply) -> UInt8 {
    skipWhitespace()
    guard position < bytes.count else { throw syntaxError(expected) }
    return bytes[position]
  }

  /// Consumes `byte` after whitespace.
  mutating func expect(_ byte: UInt8, _ expected: String) throws(MalformedReply) {
    guard try peek(expected) == byte else { throw syntaxError(expected) }
    position += 1
  }

  /// Checks that nothing but whitespace follows the value read.
  mutating func expectEnd() throws(MalformedReply) {
    skipWhitespace()
    if position < bytes.count { throw syntaxError("the end of the reply") }
  }

  // MARK: Objects and arrays

  /// Consumes `null` when it comes next, for a member whose value is absent.
  mutating func skipNull() throws(MalformedReply) -> Bool {
    guard try peek("a value") == UInt8(ascii: "n") else { return false }
    try literal("null")
    return true
  }

  /// Consumes the `{` of an object whose members follow.
  mutating func beginObject(_ name: StaticString) throws(MalformedReply) {
    guard try peek("an object") == UInt8(ascii: "{") else { throw shapeError(name, "an object") }
    position += 1
  }

  /// The next member's key (its bytes as written) with its `:` consumed, or `nil` after the
  /// object's `}`. `first`: no member read yet (no comma before this one); the caller sets
  /// it to `false` once it has one.
  mutating func nextKey(first: Bool) throws(MalformedReply) -> UnsafeBufferPointer<UInt8>? {
    guard try nextItem(first: first, closing: UInt8(ascii: "}"), first ? "a key or '}'" : "',' or '}'") else { return nil }
    guard try peek("a key") == UInt8(ascii: "\"") else { throw syntaxError("a key") }
    let content = try stringContent()
    try expect(UInt8(ascii: ":"), "':'")
    return UnsafeBufferPointer(rebasing: bytes[content])
  }

  /// Consumes the `[` of an array of `name` (`null` reads as empty: returns `false`).
  mutating func beginArray(_ name: StaticString) throws(MalformedReply) -> Bool {
    if try skipNull() { return false }
    guard bytes[position] == UInt8(ascii: "[") else { throw shapeError(name, "an array") }
    position += 1
    return true
  }

  /// Whether another element follows in an array; consumes the comma before it, or the `]`.
  mutating func nextElement(first: Bool) throws(MalformedReply) -> Bool {
    try nextItem(first: first, closing: UInt8(ascii: "]"), first ? "a value or ']'" : "',' or ']'")
  }

  /// Consumes `closing` and returns `false`, or (unless `first`) the comma before the next
  /// member or element and returns `true`.
  private mutating func nextItem(first: Bool, closing: UInt8, _ expected: String) throws(MalformedReply) -> Bool {
    let byte = try peek(expected)
    if byte == closing {
      position += 1
      return false
    }
    if !first {
      guard byte == UInt8(ascii: ",") else { throw syntaxError(expected) }
      position += 1
    }
    return true
  }

  /// Skips one value of any kind, checking that its brackets pair up.
  mutating func skipValue() throws(MalformedReply) {
    // One bit per open container, set for an object: enough for 64 levels, more than any
    // reply this client reads has.
    var open: UInt64 = 0
    var depth = 0
    var expectsValue = true
    while true {
      let byte = try peek(expectsValue ? "a value" : "',' or the end of a container")
      if expectsValue {
        switch byte {
        case UInt8(ascii: "{"), UInt8(ascii: "["):
          guard depth < 64 else { throw syntaxError("at most 64 levels of nesting") }
          open = open << 1 | (byte == UInt8(ascii: "{") ? 1 : 0)
          depth += 1
          position += 1
          let close = try peek("a value")
          if close == UInt8(ascii: "}") || close == UInt8(ascii: "]") {
            expectsValue = false
            continue
          }
          if byte == UInt8(ascii: "{") { try skipKey() }
          continue
        case UInt8(ascii: "\""): _ = try stringContent()
        case UInt8(ascii: "t"): try literal("true")
        case UInt8(ascii: "f"): try literal("false")
        case UInt8(ascii: "n"): try literal("null")
        default: _ = try numberText()
        }
        expectsValue = false
      }
      guard depth > 0 else { return }
      let inObject = open & 1 == 1
      switch try peek(inObject ? "',' or '}'" : "',' or ']'") {
      case UInt8(ascii: ","):
        position += 1
        if inObject { try skipKey() }
        expectsValue = true
      case UInt8(ascii: "}") where inObject, UInt8(ascii: "]") where !inObject:
        position += 1
        open >>= 1
        depth -= 1
        if depth == 0 { return }
      default:
        throw syntaxError(inObject ? "',' or '}'" : "',' or ']'")
      }
    }
  }

  /// Skips a key and its colon inside a skipped object.
  private mutating func skipKey() throws(MalformedReply) {
    guard try peek("a key") == UInt8(ascii: "\"") else { throw syntaxError("a key") }
    _ = try stringContent()
    try expect(UInt8(ascii: ":"), "':'")
  }

  // MARK: Scalars

  /// Reads an int64 member (a decimal string, or a number); `null` reads as 0.
  mutating func int64(_ name: StaticString) throws(MalformedReply) -> Int64 {
    let text: UnsafeBufferPointer<UInt8>
    switch try peek("a value") {
    case UInt8(ascii: "\""): text = UnsafeBufferPointer(rebasing: bytes[try stringContent()])
    case UInt8(ascii: "n"):
      try literal("null")
      return 0
    case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): text = try numberText()
    default: throw shapeError(name, "an integer")
    }
    guard let value = Self.decimal(text) else {
      throw MalformedReply(detail: "\"\(name)\" is not an integer: \"\(String(decoding: text, as: UTF8.self))\"")
    }
    return value
  }

  /// Reads a Boolean member; `null` reads as `false`.
  mutating func bool(_ name: StaticString) throws(MalformedReply) -> Bool {
    switch try peek("a value") {
    case UInt8(ascii: "t"):
      try literal("true")
      return true
    case UInt8(ascii: "f"):
      try literal("false")
      return false
    case UInt8(ascii: "n"):
      try literal("null")
      return false
    default: throw shapeError(name, "a boolean")
    }
  }

  /// Reads a string member, its escapes decoded; `null` reads as empty.
  mutating func string(_ name: StaticString) throws(MalformedReply) -> String {
    if try skipNull() { return "" }
    guard bytes[position] == UInt8(ascii: "\"") else { throw shapeError(name, "a string") }
    let open = position
    let content = try stringContent()
    if let control = bytes[content].firstIndex(where: { $0 < 0x20 }) {
      throw syntaxError("no control character inside a string", at: control)
    }
    if !bytes[content].contains(UInt8(ascii: "\\")) {
      return String(decoding: UnsafeBufferPointer(rebasing: bytes[content]), as: UTF8.self)
    }
    // Escapes are rare here (a cancel reason quoting something): the JSON reader decodes them.
    guard case .string(let text)? = try? JSONValue(parsing: Array(bytes[open..<position])) else {
      throw syntaxError("a valid string", at: open)
    }
    return text
  }

  /// Reads a `bytes` member, decoded from base64 straight into the array returned; `null`
  /// reads as empty.
  mutating func base64(_ name: StaticString) throws(MalformedReply) -> [UInt8] {
    if try skipNull() { return [] }
    guard bytes[position] == UInt8(ascii: "\"") else { throw shapeError(name, "a base64 string") }
    // Base64's alphabet needs no escape; a `\` in the string fails the decoding below.
    guard let decoded = Base64.decoded(UnsafeBufferPointer(rebasing: bytes[try stringContent()])) else {
      throw MalformedReply(detail: "\"\(name)\" is not base64")
    }
    return decoded
  }

  /// Whether the member's value is a string or an object (the forms of a gateway error).
  mutating func isStringOrObject() throws(MalformedReply) -> Bool {
    let byte = try peek("a value")
    return byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "{")
  }

  /// An error for member `name` whose value is of the wrong kind.
  private func shapeError(_ name: StaticString, _ kind: String) -> MalformedReply {
    guard position < bytes.count else { return syntaxError("a value") }
    let found: String
    switch bytes[position] {
    case UInt8(ascii: "{"): found = "an object"
    case UInt8(ascii: "["): found = "an array"
    case UInt8(ascii: "\""): found = "a string"
    case UInt8(ascii: "t"), UInt8(ascii: "f"): found = "a boolean"
    case UInt8(ascii: "n"): found = "null"
    default: found = "a number"
    }
    return MalformedReply(detail: "\"\(name)\" is \(found), not \(kind)")
  }

  /// Consumes a string at `position` (its opening quote) and returns the range of its
  /// content, escapes left as written.
  private mutating func stringContent() throws(MalformedReply) -> Range<Int> {
    let open = position
    let base = bytes.baseAddress!
    var offset = open + 1
    // `memchr` finds the closing quote many bytes at a time (a document's base64 runs to a
    // thousand bytes or more); a backslash before it means escapes, read one byte at a time.
    while offset < bytes.count {
      guard let quote = memchr(base + offset, Int32(UInt8(ascii: "\"")), bytes.count - offset) else { break }
      let end = base.distance(to: quote.assumingMemoryBound(to: UInt8.self))
      guard let backslash = memchr(base + offset, Int32(UInt8(ascii: "\\")), end - offset) else {
        position = end + 1
        return open + 1..<end
      }
      // Past the escape and the character it escapes, then look for the quote again.
      offset = base.distance(to: backslash.assumingMemoryBound(to: UInt8.self)) + 2
    }
    throw MalformedReply(detail: "the reply ends inside the string that starts at byte \(open)", isSyntax: true)
  }

  /// Consumes a number's characters and returns them.
  private mutating func numberText() throws(MalformedReply) -> UnsafeBufferPointer<UInt8> {
    let start = position
    while position < bytes.count {
      switch bytes[position] {
      case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "+"), UInt8(ascii: "."),
        UInt8(ascii: "e"), UInt8(ascii: "E"):
        position += 1
      default:
        if position == start { throw syntaxError("a value") }
        return UnsafeBufferPointer(rebasing: bytes[start..<position])
      }
    }
    if position == start { throw syntaxError("a value") }
    return UnsafeBufferPointer(rebasing: bytes[start..<position])
  }

  /// Consumes `word` (`true`, `false`, `null`).
  private mutating func literal(_ word: StaticString) throws(MalformedReply) {
    let count = word.utf8CodeUnitCount
    guard position + count <= bytes.count,
      UnsafeBufferPointer(start: word.utf8Start, count: count).elementsEqual(bytes[position..<position + count])
    else { throw syntaxError("'\(word)'") }
    position += count
  }

  /// `text` as a decimal int64 (an optional `-`, then digits only), or `nil`.
  static func decimal(_ text: UnsafeBufferPointer<UInt8>) -> Int64? {
    guard !text.isEmpty else { return nil }
    let negative = text[0] == UInt8(ascii: "-")
    let digits = negative ? 1 : 0
    guard digits < text.count else { return nil }
    var value: Int64 = 0
    for index in digits..<text.count {
      let digit = text[index] &- UInt8(ascii: "0")
      guard digit < 10 else { return nil }
      // Accumulating downwards reaches Int64.min, which has no positive counterpart.
      let (times, overflowTimes) = value.multipliedReportingOverflow(by: 10)
      let (next, overflowNext) = times.subtractingReportingOverflow(Int64(digit))
      guard !overflowTimes, !overflowNext else { return nil }
      value = next
    }
    if negative { return value }
    return value == .min ? nil : -value
  }
}

/// Whether a key as written equals `name`: lets a decoder `switch` over a key's bytes with
/// string literals as cases.
func ~= (name: StaticString, key: UnsafeBufferPointer<UInt8>) -> Bool {
  key.count == name.utf8CodeUnitCount && memcmp(key.baseAddress!, name.utf8Start, key.count) == 0
}
