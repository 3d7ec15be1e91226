import Testing
@testable import CCSync

/// The lines of a file history's `versions.log`: a line in the form a write makes is read
/// without the JSON parser, and every line reads as the parser reads it.
@Suite struct FileHistoryLineTests {
  /// The entry the JSON parser reads from `text`.
  private func parsed(_ text: String) -> FileHistory.Entry? {
    FileHistory.parsedEntry(line: Array(text.utf8)[...])
  }

  private func read(_ text: String) -> FileHistory.Entry? {
    FileHistory.entry(line: Array(text.utf8)[...])
  }

  @Test(arguments: [
    FileHistory.Entry(
      id: 7, time: "2026-12-05T10:00:00.123Z", author: VersionAuthor(host: "vm", user: "root", pid: 42, program: "ccsync"),
      device: 65024, inode: 16_294_324, rollbackOf: nil),
    FileHistory.Entry(id: 1, time: "2026-12-05T10:00:00.000Z", author: nil, device: 1, inode: 2, rollbackOf: nil),
    FileHistory.Entry(
      id: 12, time: nil, author: VersionAuthor(host: "h\u{e9}te \"q\"", user: "a\\b", pid: -1, program: "tab\there"),
      device: UInt64.max, inode: 0, rollbackOf: "3"),
  ])
  func aWrittenLineReadsBackAsTheParserReadsIt(entry: FileHistory.Entry) {
    var text: [UInt8] = []
    FileHistory.appendLine(entry, to: &text)
    #expect(text.last == UInt8(ascii: "\n"))
    let line = String(decoding: text.dropLast(), as: UTF8.self)
    #expect(read(line) == entry)
    #expect(parsed(line) == entry, "the line is JSON the parser reads the same: \(line)")
  }

  @Test(arguments: [
    // Another order or spacing, as another writer might print it: parsed.
    #"{"device": 5, "inode": 6, "id": 3}"#,
    #"{"id":3,"time":"t","device":5,"inode":6,"extra":true}"#,
    // Numbers the parser refuses or reads otherwise.
    #"{"id":007,"device":5,"inode":6}"#,
    #"{"id":3,"device":99999999999999999999,"inode":6}"#,
    // A line a power cut cut short, with the next one glued to it.
    #"{"id":5,"ti{"id":6,"time":"2026-12-05T10:00:00.000Z","device":5,"inode":6}"#,
    "\u{0}\u{0}\u{0}",
    #"{"id":3,"device":5,"inode":6}}"#,
  ])
  func anyOtherLineReadsAsTheParserReadsIt(line: String) {
    #expect(read(line) == parsed(line), "\(line)")
  }
}
