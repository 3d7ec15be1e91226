import CCSyncSystem
import Glibc
import CCSyncJSON

/// The lines of `versions.log`: one compact JSON object a version, written byte by byte (a
/// write makes one every time) and found from the log's end (a write needs the last one).
extension FileHistory {
  static let lineBreak = UInt8(ascii: "\n")

  /// The version one line of the log records; `nil` for a line that is not one. A line in
  /// the very form ``appendLine(_:to:)`` writes, with ASCII strings that need no escape, is
  /// read without the JSON parser (a write after another process's reads one line): that
  /// form is valid JSON, and the reader takes nothing else; any other line is parsed.
  static func entry(line: ArraySlice<UInt8>) -> Entry? {
    LineReader.fields(of: line).map { $0.entry(of: line) } ?? parsedEntry(line: line)
  }

  /// The id and file of the version one line records, as ``entry(line:)`` reads them, without
  /// making its strings: what a write needs of the log's last line, and a compaction of every
  /// line it keeps.
  static func loggedVersion(line: ArraySlice<UInt8>) -> LoggedVersion? {
    if let fields = LineReader.fields(of: line) {
      return LoggedVersion(id: Int(fields.id), device: UInt64(bitPattern: fields.device), inode: UInt64(bitPattern: fields.inode))
    }
    return parsedEntry(line: line).map(LoggedVersion.init)
  }

  /// The version `line` records, as the JSON parser reads it.
  static func parsedEntry(line: ArraySlice<UInt8>) -> Entry? {
    guard case .object(let object)? = try? JSONValue(parsing: Array(line)),
      let id = object["id"]?.numberValue?.int64Value,
      let device = object["device"]?.numberValue?.int64Value, let inode = object["inode"]?.numberValue?.int64Value
    else { return nil }
    var time: String?
    if case .string(let text)? = object["time"] { time = text }
    var rollbackOf: String?
    if case .string(let text)? = object["rollbackOf"] { rollbackOf = text }
    return Entry(
      id: Int(id), time: time, author: VersionAuthor(json: object["author"]), device: UInt64(bitPattern: device),
      inode: UInt64(bitPattern: inode), rollbackOf: rollbackOf)
  }

  /// The last version `bytes` (lines of the log) record, found from their end.
  static func lastLoggedVersion(in bytes: ArraySlice<UInt8>) -> LoggedVersion? {
    for line in LinesFromEnd(bytes) {
      if let version = loggedVersion(line: line) { return version }
    }
    return nil
  }

  /// How many lines `bytes` hold (a last one without its line break counts).
  static func lineCount(_ bytes: ArraySlice<UInt8>) -> Int {
    bytes.withUnsafeBytes { buffer in
      guard let start = buffer.baseAddress, let last = buffer.last else { return 0 }
      let end = start + buffer.count
      var count = 0
      var next = start
      while next < end, let found = memchr(next, Int32(lineBreak), end - next) {
        count += 1
        next = UnsafeRawPointer(found) + 1
      }
      return count + (last == lineBreak ? 0 : 1)
    }
  }

  /// The lines of some bytes that are not empty, the last first (a concrete type, reading
  /// the bytes in place: a write looks for the last line of the log every time).
  struct LinesFromEnd: Sequence, IteratorProtocol {
    private let bytes: ArraySlice<UInt8>
    private var end: Int

    init(_ bytes: ArraySlice<UInt8>) {
      self.bytes = bytes
      end = bytes.endIndex
    }

    mutating func next() -> ArraySlice<UInt8>? {
      while end > bytes.startIndex, bytes[end - 1] == FileHistory.lineBreak { end -= 1 }
      guard end > bytes.startIndex else { return nil }
      let lineEnd = end
      let start = bytes.withUnsafeBufferPointer { buffer in
        var offset = lineEnd - bytes.startIndex
        while offset > 0, buffer[offset - 1] != FileHistory.lineBreak { offset -= 1 }
        return bytes.startIndex + offset
      }
      end = start
      return bytes[start..<lineEnd]
    }
  }

  /// One line of the log, appended to `text`: a compact JSON object, its members in this
  /// order, the bytes the JSON printer makes of it. Written byte by byte: every write makes
  /// one.
  static func appendLine(_ entry: Entry, to text: inout [UInt8]) {
    appendLine(
      id: entry.id, time: entry.time.map(LineTime.text) ?? .none, author: entry.author, device: entry.device,
      inode: entry.inode, rollbackOf: entry.rollbackOf, to: &text)
  }

  /// The line of a version this process writes at `time` (the clock's now), appended to
  /// `text` as ``appendLine(_:to:)`` writes it, with the time's digits written straight into
  /// the line.
  static func appendWrittenLine(
    _ version: LoggedVersion, time: FileIdentity.Timestamp, rollbackOf: String?, to text: inout [UInt8]
  ) {
    appendLine(
      id: version.id, time: .clock(time), author: thisProcess.author, device: version.device, inode: version.inode,
      rollbackOf: rollbackOf, to: &text)
  }

  /// A line's time: none, a timestamp's text, or a clock reading to write as one.
  private enum LineTime {
    case none
    case text(String)
    case clock(FileIdentity.Timestamp)
  }

  /// The members of a line, in their order.
  private static func appendLine(
    id: Int, time: LineTime, author: VersionAuthor?, device: UInt64, inode: UInt64, rollbackOf: String?,
    to text: inout [UInt8]
  ) {
    append(#"{"id":"#, to: &text)
    appendNumber(Int64(id), to: &text)
    switch time {
    case .none:
      break
    case .text(let time):
      append(#","time":"#, to: &text)
      appendString(time, to: &text)
    case .clock(let time):
      append(#","time":""#, to: &text)
      FileSystem.appendISOTimestamp(time, to: &text)
      text.append(UInt8(ascii: "\""))
    }
    if let author, author == thisProcess.author {
      text += thisProcess.text
    } else if let author {
      // The members of ``VersionAuthor/json``, in its order.
      append(#","author":{"host":"#, to: &text)
      appendString(author.host, to: &text)
      append(#","user":"#, to: &text)
      appendString(author.user, to: &text)
      append(#","pid":"#, to: &text)
      appendNumber(Int64(author.pid), to: &text)
      append(#","program":"#, to: &text)
      appendString(author.program, to: &text)
      text.append(UInt8(ascii: "}"))
    }
    append(#","device":"#, to: &text)
    appendNumber(Int64(bitPattern: device), to: &text)
    append(#","inode":"#, to: &text)
    appendNumber(Int64(bitPattern: inode), to: &text)
    if let rollbackOf {
      append(#","rollbackOf":"#, to: &text)
      appendString(rollbackOf, to: &text)
    }
    append("}\n", to: &text)
  }

  /// ``VersionAuthor/thisProcess`` and its text in a line.
  private static let thisProcess: (author: VersionAuthor, text: [UInt8]) = {
    var text = Array(#","author":"#.utf8)
    text += VersionAuthor.thisProcess.json.formatted(.compact).utf8
    return (VersionAuthor.thisProcess, text)
  }()

  /// Appends `literal`'s bytes to `text` (a copy of its bytes, where appending a string's
  /// UTF-8 view goes through the generic path).
  static func append(_ literal: StaticString, to text: inout [UInt8]) {
    text.append(contentsOf: UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
  }

  static func appendNumber(_ number: Int64, to text: inout [UInt8]) {
    if number < 0 { text.append(UInt8(ascii: "-")) }
    // The digits from the last, into 20 bytes (the most a 64-bit magnitude has).
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
      var rest = number.magnitude
      var start = digits.count
      repeat {
        start -= 1
        digits[start] = UInt8(ascii: "0") + UInt8(rest % 10)
        rest /= 10
      } while rest > 0
      text.append(contentsOf: UnsafeBufferPointer(rebasing: digits[start...]))
    }
  }

  /// `string` as a JSON string: as it is between quotes when nothing in it needs escaping (a
  /// timestamp, a version id), else as the printer escapes it.
  private static func appendString(_ string: String, to text: inout [UInt8]) {
    let plain = string.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }
    if plain {
      text.append(UInt8(ascii: "\""))
      text += string.utf8
      text.append(UInt8(ascii: "\""))
    } else {
      text += JSONValue.string(string).formatted(.compact).utf8
    }
  }
}

/// Reads a line of the log in the form ``FileHistory/appendLine(_:to:)`` writes, with strings
/// of printable ASCII that need no escape and integers as JSON spells them; anything else is
/// `nil`, for the JSON parser to read. What it takes is valid JSON, read as the parser reads it.
/// Reads the line's bytes in place and makes no string.
private struct LineReader {
  let line: UnsafeBufferPointer<UInt8>
  var index = 0

  /// The members of a line in the written form, its strings as where they lie in the line
  /// (offsets from its start).
  struct Fields {
    var id: Int64
    var time: Range<Int>?
    var author: (host: Range<Int>, user: Range<Int>, pid: Int64, program: Range<Int>)?
    var device: Int64
    var inode: Int64
    var rollbackOf: Range<Int>?

    /// The entry these fields of `line` make.
    func entry(of line: ArraySlice<UInt8>) -> FileHistory.Entry {
      func text(_ range: Range<Int>) -> String {
        String(decoding: line[line.startIndex + range.lowerBound..<line.startIndex + range.upperBound], as: UTF8.self)
      }
      return FileHistory.Entry(
        id: Int(id), time: time.map(text),
        author: author.map {
          VersionAuthor(host: text($0.host), user: text($0.user), pid: Int32(truncatingIfNeeded: $0.pid), program: text($0.program))
        },
        device: UInt64(bitPattern: device), inode: UInt64(bitPattern: inode), rollbackOf: rollbackOf.map(text))
    }
  }

  /// The fields of `line`, or `nil` when it is not in the written form.
  static func fields(of line: ArraySlice<UInt8>) -> Fields? {
    line.withUnsafeBufferPointer { bytes in
      var reader = LineReader(line: bytes)
      return reader.fields()
    }
  }

  /// Reads the whole line.
  private mutating func fields() -> Fields? {
    guard skip(#"{"id":"#), let id = number() else { return nil }
    var fields = Fields(id: id, time: nil, author: nil, device: 0, inode: 0, rollbackOf: nil)
    if skip(#","time":"#) {
      guard let time = string() else { return nil }
      fields.time = time
    }
    if skip(#","author":{"host":"#) {
      guard let host = string(), skip(#","user":"#), let user = string(), skip(#","pid":"#), let pid = number(),
        skip(#","program":"#), let program = string(), skip("}")
      else { return nil }
      fields.author = (host, user, pid, program)
    }
    guard skip(#","device":"#), let device = number(), skip(#","inode":"#), let inode = number() else { return nil }
    (fields.device, fields.inode) = (device, inode)
    if skip(#","rollbackOf":"#) {
      guard let rollbackOf = string() else { return nil }
      fields.rollbackOf = rollbackOf
    }
    guard skip("}"), index == line.count else { return nil }
    return fields
  }

  /// The byte at `offset` from here, or `nil` past the line's end.
  private func byte(_ offset: Int = 0) -> UInt8? {
    index + offset < line.count ? line[index + offset] : nil
  }

  /// Passes over `literal` when the text goes on with it.
  private mutating func skip(_ literal: StaticString) -> Bool {
    let count = literal.utf8CodeUnitCount
    guard line.count - index >= count, let start = line.baseAddress,
      memcmp(start + index, literal.utf8Start, count) == 0
    else { return false }
    index += count
    return true
  }

  /// An integer as JSON spells it: an optional minus, then `0` or digits that do not start
  /// with one.
  private mutating func number() -> Int64? {
    let negative = byte() == UInt8(ascii: "-")
    if negative { index += 1 }
    if byte() == UInt8(ascii: "0"), let next = byte(1), next >= UInt8(ascii: "0"), next <= UInt8(ascii: "9") {
      return nil
    }
    var magnitude: Int64 = 0
    let start = index
    while let digit = byte(), digit >= UInt8(ascii: "0"), digit <= UInt8(ascii: "9") {
      let (times, overflow) = magnitude.multipliedReportingOverflow(by: 10)
      let (sum, carry) = times.addingReportingOverflow(Int64(digit - UInt8(ascii: "0")))
      guard !overflow, !carry else { return nil }
      magnitude = sum
      index += 1
    }
    guard index > start else { return nil }
    return negative ? -magnitude : magnitude
  }

  /// A string in quotes of printable ASCII with no escape in it: where its text lies.
  private mutating func string() -> Range<Int>? {
    guard byte() == UInt8(ascii: "\"") else { return nil }
    let start = index + 1
    var end = start
    while end < line.count, line[end] != UInt8(ascii: "\"") {
      guard line[end] >= 0x20, line[end] < 0x7F, line[end] != UInt8(ascii: "\\") else { return nil }
      end += 1
    }
    guard end < line.count else { return nil }
    index = end + 1
    return start..<end
  }
}
