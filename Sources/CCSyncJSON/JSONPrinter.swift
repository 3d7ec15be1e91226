import CCSyncSystem

extension JSONValue {
  /// This value as JSON text.
  /// - Parameter style: ``JSONFormat/pretty`` (the default: 2-space indent, final newline) or
  ///   ``JSONFormat/compact``.
  /// - Returns: text that parses back to an equal value, with the same member order and the
  ///   same number spellings.
  public func formatted(_ style: JSONFormat = .pretty) -> String {
    var printer = JSONPrinter(style: style)
    printer.write(self)
    return printer.makeString()
  }

  /// This value as UTF-8 JSON text, ready to write to a file; the same bytes as
  /// ``formatted(_:)``.
  /// - Parameter style: ``JSONFormat/pretty`` (the default) or ``JSONFormat/compact``.
  public func formattedBytes(_ style: JSONFormat = .pretty) -> [UInt8] {
    var printer = JSONPrinter(style: style)
    printer.write(self)
    return printer.makeBytes()
  }
}

/// Writes JSON text into a growing byte buffer it owns.
///
/// Containers recurse, one call per level: a value nests as deep as the parser's limit (512
/// by default), which takes a few tens of kilobytes of stack.
package struct JSONPrinter: ~Copyable {
  private var base: UnsafeMutablePointer<UInt8>
  private var capacity: Int
  package private(set) var count = 0
  /// The deepest nesting of arrays and objects written so far, counted as the parser counts
  /// it (a container written at `depth` 0 is level 1); 0 when none was written.
  package private(set) var deepestLevel = 0
  private let indentWidth: Int
  package let pretty: Bool

  package init(style: JSONFormat, initialCapacity: Int = 1024) {
    indentWidth = style.indentWidth ?? 0
    pretty = style.indentWidth != nil
    capacity = initialCapacity
    base = .allocate(capacity: initialCapacity)
  }

  deinit {
    base.deallocate()
  }

  /// Forgets what was written, keeping the buffer for more.
  package mutating func reset() {
    count = 0
  }

  /// Writes a whole document: the value, and in pretty style a final newline.
  package mutating func write(_ value: JSONValue) {
    write(value, depth: 0)
    finishDocument()
  }

  /// Ends a document: in pretty style, the final newline.
  package mutating func finishDocument() {
    if pretty { append(UInt8(ascii: "\n")) }
  }

  /// The text written so far, as a `String`.
  package func makeString() -> String {
    String(unsafeUninitializedCapacity: count) { buffer in
      buffer.baseAddress!.update(from: base, count: count)
      return count
    }
  }

  /// The text written so far, as bytes.
  package func makeBytes() -> [UInt8] {
    [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
      buffer.baseAddress!.update(from: base, count: count)
      initialized = count
    }
  }

  package mutating func write(_ value: borrowing JSONValue, depth: Int) {
    switch value {
    case .null:
      append("null")
    case .bool(let bool):
      append(bool ? "true" : "false")
    case .number(let number):
      appendUTF8(of: number.text)
    case .string(let string):
      writeString(string)
    case .array(let elements):
      if depth >= deepestLevel { deepestLevel = depth + 1 }
      guard !elements.isEmpty else { return append("[]") }
      append(UInt8(ascii: "["))
      // Through the buffer, so each element is borrowed where it lies, not copied (a retain
      // and a release per value).
      elements.withUnsafeBufferPointer { elements in
        for index in elements.indices {
          if index > 0 { append(UInt8(ascii: ",")) }
          if pretty { writeNewline(depth: depth + 1) }
          write(elements[index], depth: depth + 1)
        }
      }
      if pretty { writeNewline(depth: depth) }
      append(UInt8(ascii: "]"))
    case .object(let object):
      if depth >= deepestLevel { deepestLevel = depth + 1 }
      guard !object.isEmpty else { return append("{}") }
      append(UInt8(ascii: "{"))
      object.members.withUnsafeBufferPointer { members in
        for index in members.indices {
          if index > 0 { append(UInt8(ascii: ",")) }
          if pretty { writeNewline(depth: depth + 1) }
          writeKey(members[index].key)
          write(members[index].value, depth: depth + 1)
        }
      }
      if pretty { writeNewline(depth: depth) }
      append(UInt8(ascii: "}"))
    }
  }

  package mutating func writeNewline(depth: Int) {
    let spaces = depth * indentWidth
    reserve(1 + spaces)
    base[count] = UInt8(ascii: "\n")
    (base + count + 1).initialize(repeating: UInt8(ascii: " "), count: spaces)
    count += 1 + spaces
  }

  /// Writes a member's key in quotes and the colon after it (and a space in pretty style).
  @inline(__always)
  package mutating func writeKey(_ key: String) {
    writeString(key)
    if pretty { append(": ") } else { append(UInt8(ascii: ":")) }
  }

  /// Writes a member's key, given as its UTF-8 bytes, in quotes and the colon after it: the
  /// same bytes as ``writeKey(_:)``.
  /// - Returns: the offset just after the key's closing quote.
  @discardableResult
  package mutating func writeKey(utf8 bytes: UnsafeBufferPointer<UInt8>) -> Int {
    writeQuotedUTF8(bytes)
    let end = count
    if pretty { append(": ") } else { append(UInt8(ascii: ":")) }
    return end
  }

  /// Writes `bytes` (at most ``shortStringLength``) in quotes if none of them needs an escape
  /// and returns `true`; otherwise writes nothing and returns `false`. Whole words: a length
  /// that is not a multiple of the word is covered by one more word (or two half words, for
  /// four to seven bytes) that overlaps the last one, so no byte is handled alone unless the
  /// key is shorter than four bytes.
  @inline(__always)
  private mutating func writePlainShortString(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
    let length = bytes.count
    reserve(length + 2)
    let output = base + count
    output.pointee = UInt8(ascii: "\"")
    let contents = UnsafeMutableRawPointer(output + 1)
    if let source = bytes.baseAddress {
      let raw = UnsafeRawPointer(source)
      if length >= 8 {
        var index = 0
        while true {
          let offset = min(index, length - 8)
          let word = raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
          if JSONReader.specialBytes(in: UInt64(littleEndian: word)) != 0 { return false }
          contents.storeBytes(of: word, toByteOffset: offset, as: UInt64.self)
          index += 8
          if index >= length { break }
        }
      } else if length >= 4 {
        let head = raw.loadUnaligned(as: UInt32.self)
        let tail = raw.loadUnaligned(fromByteOffset: length - 4, as: UInt32.self)
        let word = UInt64(UInt32(littleEndian: head)) | UInt64(UInt32(littleEndian: tail)) << 32
        if JSONReader.specialBytes(in: word) != 0 { return false }
        contents.storeBytes(of: head, as: UInt32.self)
        contents.storeBytes(of: tail, toByteOffset: length - 4, as: UInt32.self)
      } else {
        for index in 0..<length {
          let byte = source[index]
          if byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { return false }
          contents.storeBytes(of: byte, toByteOffset: index, as: UInt8.self)
        }
      }
    }
    output[length + 1] = UInt8(ascii: "\"")
    count += length + 2
    return true
  }

  /// Calls `body` with the bytes written at `range`; they move when the buffer grows, so
  /// `body` must not keep them.
  package func withWrittenBytes<Result>(_ range: Range<Int>, _ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows -> Result {
    try body(UnsafeBufferPointer(start: base + range.lowerBound, count: range.count))
  }

  /// Strings and keys up to this many bytes are tried with ``writePlainShortString(_:)``.
  package static let shortStringLength = 32

  /// Writes an integer's decimal digits: the same text as ``JSONNumber/init(integer:)-(Int64)``,
  /// without making a `String` first.
  package mutating func writeInteger(_ value: Int64) {
    writeDigits(magnitude: value.magnitude, negative: value < 0)
  }

  /// Writes an unsigned integer's decimal digits (see ``writeInteger(_:)-(Int64)``).
  package mutating func writeInteger(_ value: UInt64) {
    writeDigits(magnitude: value, negative: false)
  }

  /// Writes a finite double as ``JSONNumber/init(_:)-(Double)`` spells it.
  package mutating func writeDouble(_ value: Double) {
    switch JSONNumber.spelling(of: value) {
    case .negativeZero: append("-0")
    case .integer(let integer): writeInteger(integer)
    case .shortest: appendUTF8(of: value.description)
    }
  }

  private mutating func writeDigits(magnitude: UInt64, negative: Bool) {
    let length = JSONNumber.decimalLength(magnitude: magnitude, negative: negative)
    reserve(length)
    JSONNumber.writeDecimal(magnitude: magnitude, negative: negative, length: length, to: base + count)
    count += length
  }

  /// Writes `string` in quotes, escaping only what RFC 8259 requires.
  package mutating func writeString(_ string: String) {
    let done: Void? = string.utf8.withContiguousStorageIfAvailable { writeQuotedUTF8($0) }
    if done == nil {
      var copy = string
      copy.withUTF8 { writeQuotedUTF8($0) }
    }
  }

  /// Writes `bytes` in quotes, escaped; a short run without escapes is copied by words
  /// (``writePlainShortString(_:)``), without a call for the copy.
  @inline(__always)
  private mutating func writeQuotedUTF8(_ bytes: UnsafeBufferPointer<UInt8>) {
    if bytes.count > JSONPrinter.shortStringLength || !writePlainShortString(bytes) { writeQuoted(bytes) }
  }

  private mutating func writeQuoted(_ bytes: UnsafeBufferPointer<UInt8>) {
    // Room for the quotes and the text as it is; each escape found reserves its own room
    // (at most six bytes, `\u00XX`), so a long string without escapes does not make the
    // buffer grow for a worst case that does not come.
    reserve(bytes.count + 2)
    base[count] = UInt8(ascii: "\"")
    count += 1
    var runStart = 0
    var index = 0
    while true {
      index = JSONPrinter.firstByteToEscape(in: bytes, from: index)
      guard index < bytes.count else { break }
      let run = index - runStart
      reserve(run + 6 + (bytes.count - index - 1) + 1)
      (base + count).update(from: bytes.baseAddress! + runStart, count: run)
      count = JSONPrinter.writeEscape(of: bytes[index], to: base + count + run) - base
      index += 1
      runStart = index
    }
    let run = index - runStart
    if run > 0 {
      (base + count).update(from: bytes.baseAddress! + runStart, count: run)
      count += run
    }
    base[count] = UInt8(ascii: "\"")
    count += 1
  }

  /// The offset of the first `"`, `\\` or control character at or after `start`, or
  /// `bytes.count`; eight bytes at a time, with the test the parser uses.
  @inline(__always)
  private static func firstByteToEscape(in bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int {
    var index = start
    if let base = bytes.baseAddress {
      let raw = UnsafeRawPointer(base)
      while index + 8 <= bytes.count {
        let word = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: index, as: UInt64.self))
        let found = JSONReader.specialBytes(in: word)
        if found != 0 { return index + found.trailingZeroBitCount >> 3 }
        index += 8
      }
    }
    while index < bytes.count {
      let byte = bytes[index]
      if byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { return index }
      index += 1
    }
    return index
  }

  private static func writeEscape(of byte: UInt8, to output: UnsafeMutablePointer<UInt8>) -> UnsafeMutablePointer<UInt8> {
    output[0] = UInt8(ascii: "\\")
    let short: UInt8
    switch byte {
    case UInt8(ascii: "\""): short = UInt8(ascii: "\"")
    case UInt8(ascii: "\\"): short = UInt8(ascii: "\\")
    case 0x0A: short = UInt8(ascii: "n")
    case 0x0D: short = UInt8(ascii: "r")
    case 0x09: short = UInt8(ascii: "t")
    case 0x08: short = UInt8(ascii: "b")
    case 0x0C: short = UInt8(ascii: "f")
    default:
      let hex: StaticString = "0123456789abcdef"
      output[1] = UInt8(ascii: "u")
      output[2] = UInt8(ascii: "0")
      output[3] = UInt8(ascii: "0")
      output[4] = hex.utf8Start[Int(byte >> 4)]
      output[5] = hex.utf8Start[Int(byte & 0x0F)]
      return output + 6
    }
    output[1] = short
    return output + 2
  }

  package mutating func appendUTF8(of text: String) {
    let done: Void? = text.utf8.withContiguousStorageIfAvailable { append($0) }
    if done == nil {
      var copy = text
      copy.withUTF8 { append($0) }
    }
  }

  package mutating func append(_ text: StaticString) {
    append(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
  }

  private mutating func append(_ bytes: UnsafeBufferPointer<UInt8>) {
    reserve(bytes.count)
    if let source = bytes.baseAddress { (base + count).update(from: source, count: bytes.count) }
    count += bytes.count
  }

  package mutating func append(_ byte: UInt8) {
    reserve(1)
    base[count] = byte
    count += 1
  }

  @inline(__always)
  private mutating func reserve(_ extra: Int) {
    if count + extra > capacity { grow(toAtLeast: count + extra) }
  }

  private mutating func grow(toAtLeast needed: Int) {
    var newCapacity = capacity * 2
    while newCapacity < needed { newCapacity *= 2 }
    let newBase = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
    newBase.update(from: base, count: count)
    base.deallocate()
    base = newBase
    capacity = newCapacity
  }
}
