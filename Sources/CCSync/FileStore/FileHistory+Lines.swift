import CCSyncSystem
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
    var reader = LineReader(line: line)
    return reader.entry() ?? parsedEntry(line: line)
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
  static func lastEntry(in bytes: ArraySlice<UInt8>) -> Entry? {
    for line in linesFromEnd(bytes) {
      if let entry = entry(line: line) { return entry }
    }
    return nil
  }

  /// How many lines `bytes` hold (a last one without its line break counts).
  static func lineCount(_ bytes: ArraySlice<UInt8>) -> Int {
    var count = 0
    for byte in bytes where byte == lineBreak { count += 1 }
    return count + (bytes.last.map { $0 == lineBreak ? 0 : 1 } ?? 0)
  }

  /// The lines of `bytes` that are not empty, the last first.
  static func linesFromEnd(_ bytes: ArraySlice<UInt8>) -> some Sequence<ArraySlice<UInt8>> {
    var end = bytes.endIndex
    return AnyIterator { () -> ArraySlice<UInt8>? in
      while end > bytes.startIndex, bytes[end - 1] == lineBreak { end -= 1 }
      guard end > bytes.startIndex else { return nil }
      var start = end
      while start > bytes.startIndex, bytes[start - 1] != lineBreak { start -= 1 }
      defer { end = start }
      return bytes[start..<end]
    }
  }

  /// One line of the log, appended to `text`: a compact JSON object, its members in this
  /// order, the bytes the JSON printer makes of it. Written byte by byte: every write makes
  /// one.
  static func appendLine(_ entry: Entry, to text: inout [UInt8]) {
    text += #"{"id":"#.utf8
    appendNumber(Int64(entry.id), to: &text)
    if let time = entry.time {
      text += #","time":"#.utf8
      appendString(time, to: &text)
    }
    if let author = entry.author, author == thisProcess.author {
      text += thisProcess.text
    } else if let author = entry.author {
      // The members of ``VersionAuthor/json``, in its order.
      text += #","author":{"host":"#.utf8
      appendString(author.host, to: &text)
      text += #","user":"#.utf8
      appendString(author.user, to: &text)
      text += #","pid":"#.utf8
      appendNumber(Int64(author.pid), to: &text)
      text += #","program":"#.utf8
      appendString(author.program, to: &text)
      text.append(UInt8(ascii: "}"))
    }
    text += #","device":"#.utf8
    appendNumber(Int64(bitPattern: entry.device), to: &text)
    text += #","inode":"#.utf8
    appendNumber(Int64(bitPattern: entry.inode), to: &text)
    if let rollbackOf = entry.rollbackOf {
      text += #","rollbackOf":"#.utf8
      appendString(rollbackOf, to: &text)
    }
    text += "}\n".utf8
  }

  /// ``VersionAuthor/thisProcess`` and its text in a line.
  private static let thisProcess: (author: VersionAuthor, text: [UInt8]) = {
    var text = Array(#","author":"#.utf8)
    text += VersionAuthor.thisProcess.json.formatted(.compact).utf8
    return (VersionAuthor.thisProcess, text)
  }()

  static func appendNumber(_ number: Int64, to text: inout [UInt8]) {
    if number < 0 { text.append(UInt8(ascii: "-")) }
    var rest = number.magnitude
    var divisor: UInt64 = 1
    while divisor <= rest / 10 { divisor *= 10 }
    repeat {
      text.append(UInt8(ascii: "0") + UInt8(rest / divisor))
      rest %= divisor
      divisor /= 10
    } while divisor > 0
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
private struct LineReader {
  let line: ArraySlice<UInt8>
  var index: Int

  init(line: ArraySlice<UInt8>) {
    self.line = line
    index = line.startIndex
  }

  mutating func entry() -> FileHistory.Entry? {
    guard skip(#"{"id":"#), let id = number() else { return nil }
    var time: String?
    if skip(#","time":"#) {
      guard let text = string() else { return nil }
      time = text
    }
    var author: VersionAuthor?
    if skip(#","author":{"host":"#) {
      guard let host = string(), skip(#","user":"#), let user = string(), skip(#","pid":"#), let pid = number(),
        skip(#","program":"#), let program = string(), skip("}")
      else { return nil }
      author = VersionAuthor(host: host, user: user, pid: Int32(truncatingIfNeeded: pid), program: program)
    }
    guard skip(#","device":"#), let device = number(), skip(#","inode":"#), let inode = number() else { return nil }
    var rollbackOf: String?
    if skip(#","rollbackOf":"#) {
      guard let text = string() else { return nil }
      rollbackOf = text
    }
    guard skip("}"), index == line.endIndex else { return nil }
    return FileHistory.Entry(
      id: Int(id), time: time, author: author, device: UInt64(bitPattern: device), inode: UInt64(bitPattern: inode),
      rollbackOf: rollbackOf)
  }

  /// Passes over `literal` when the text goes on with it.
  private mutating func skip(_ literal: StaticString) -> Bool {
    let count = literal.utf8CodeUnitCount
    guard line.endIndex - index >= count else { return false }
    let expected = literal.utf8Start
    for offset in 0..<count where line[index + offset] != expected[offset] { return false }
    index += count
    return true
  }

  /// An integer as JSON spells it: an optional minus, then `0` or digits that do not start
  /// with one.
  private mutating func number() -> Int64? {
    let negative = index < line.endIndex && line[index] == UInt8(ascii: "-")
    if negative { index += 1 }
    var magnitude: Int64 = 0
    let start = index
    if index + 1 < line.endIndex, line[index] == UInt8(ascii: "0"), line[index + 1] >= UInt8(ascii: "0"),
      line[index + 1] <= UInt8(ascii: "9")
    {
      return nil
    }
    while index < line.endIndex, line[index] >= UInt8(ascii: "0"), line[index] <= UInt8(ascii: "9") {
      let (times, overflow) = magnitude.multipliedReportingOverflow(by: 10)
      let (sum, carry) = times.addingReportingOverflow(Int64(line[index] - UInt8(ascii: "0")))
      guard !overflow, !carry else { return nil }
      magnitude = sum
      index += 1
    }
    guard index > start else { return nil }
    return negative ? -magnitude : magnitude
  }

  /// A string in quotes of printable ASCII with no escape in it.
  private mutating func string() -> String? {
    guard index < line.endIndex, line[index] == UInt8(ascii: "\"") else { return nil }
    let start = index + 1
    var end = start
    while end < line.endIndex, line[end] != UInt8(ascii: "\"") {
      guard line[end] >= 0x20, line[end] < 0x7F, line[end] != UInt8(ascii: "\\") else { return nil }
      end += 1
    }
    guard end < line.endIndex else { return nil }
    index = end + 1
    return String(decoding: line[start..<end], as: UTF8.self)
  }
}
