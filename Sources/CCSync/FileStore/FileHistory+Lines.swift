import CCSyncSystem
import CCSyncJSON

/// The lines of `versions.log`: one compact JSON object a version, written byte by byte (a
/// write makes one every time) and found from the log's end (a write needs the last one).
extension FileHistory {
  static let lineBreak = UInt8(ascii: "\n")

  /// The version one line of the log records; `nil` for a line that is not one.
  static func entry(line: ArraySlice<UInt8>) -> Entry? {
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
  /// order. Written byte by byte (every write makes one), with this process's author
  /// printed once.
  static func appendLine(_ entry: Entry, to text: inout [UInt8]) {
    text += #"{"id":"#.utf8
    appendNumber(Int64(entry.id), to: &text)
    if let time = entry.time {
      text += #","time":"#.utf8
      appendString(time, to: &text)
    }
    if let author = entry.author {
      text += #","author":"#.utf8
      text += author == thisProcess.author ? thisProcess.text : Array(author.json.formatted(.compact).utf8)
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

  /// ``VersionAuthor/thisProcess`` and its text in the log.
  private static let thisProcess = (author: VersionAuthor.thisProcess, text: Array(VersionAuthor.thisProcess.json.formatted(.compact).utf8))

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
