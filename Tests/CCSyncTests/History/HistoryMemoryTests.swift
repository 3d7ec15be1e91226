import Foundation
import Testing
@testable import CCSync
import CCSyncJSON

/// A writer remembers its file history's keep setting and the log's last line (see
/// `HistoryMemory`), so that the only writer reads neither again; what other processes do in
/// between (lines appended, the log compacted into a new file, another keep setting) is never
/// missed: the ids go on from the last one written, whoever wrote it, and none is used twice.
@Suite struct HistoryMemoryTests {
  private let counter = JSONPath(tokens: ["counter"])

  /// One exact read-modify-write of the counter by this process.
  private func increment(_ document: SharedDocument) throws {
    try document.update { json in
      let value = try json.value(at: counter)?.numberValue?.int64Value ?? 0
      try json.setValue(.number(JSONNumber(value + 1)), at: counter)
    }
  }

  /// `count` increments by another process, the test helper, one after the other.
  private func incrementInAnotherProcess(_ path: String, _ count: Int) throws {
    let outcome = try ChildProcess.run(try testHelper(), ["increment", path, String(count), "relaxed"], deadline: .seconds(120))
    #expect(outcome.succeeded, "\(outcome.standardError)")
  }

  /// The ids `document` lists, newest first, and a check that each kept version holds the
  /// counter it was written with (version `id` holds `id - 1`: version 1 is the file as the
  /// test wrote it).
  private func versionIDs(_ document: SharedDocument) throws -> [String] {
    let versions = try document.versions()
    for version in versions.dropFirst() {
      let value = try document.value(ofVersion: version.id).value(at: counter)?.numberValue?.int64Value
      #expect(value.map { $0 + 1 } == Int64(version.id), "version \(version.id) holds counter \(String(describing: value))")
    }
    return versions.map(\.id)
  }

  private func ids(_ range: ClosedRange<Int>) -> [String] {
    range.reversed().map(String.init)
  }

  /// Runs `body` with a document whose file holds `{"counter": 0}`, written by the test
  /// (outside ccsync: the first write keeps it as version 1), and the path of its log.
  private func withCounterDocument(_ body: (_ path: String, _ log: String, SharedDocument) throws -> Void) throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("counter.json")
      writeFile(path, #"{"counter": 0}"#)
      try body(path, directory.file(".counter.json.history/versions.log"), SharedDocument(path: path))
    }
  }

  @Test func idsGoOnAfterAnotherProcessAppendsCompactsAndChangesTheSetting() throws {
    try withCounterDocument { path, log, document in
      for _ in 1...3 { try increment(document) }
      #expect(try versionIDs(document) == ids(1...4))

      // Two lines appended to the log this process remembers.
      try incrementInAnotherProcess(path, 2)
      try increment(document)
      #expect(try versionIDs(document) == ids(1...7))

      // Past a compaction: the log is another file, with the last 21 versions.
      try incrementInAnotherProcess(path, 90)
      try increment(document)
      #expect(try versionIDs(document) == ids(78...98))

      // Another keep setting, made by another process.
      #expect(try CLI.run(["set", "--keep", "3", path, "counter", "98"]).status == 0)
      try increment(document)
      #expect(try versionIDs(document) == ids(97...100))

      // This process alone, past compactions of its own.
      for _ in 1...150 { try increment(document) }
      #expect(try versionIDs(document) == ids(247...250))
      let lines = try String(contentsOfFile: log, encoding: .utf8)
      #expect(lines.split(separator: "\n").count <= 3 + 1 + 64, "the log is compacted")
    }
  }

  /// A log that lost its last lines in place (as after a power cut that kept the file but
  /// not all its data) is the same file, shorter: it is read again, and the ids go on from
  /// its last line, the kept file under the next id replaced.
  @Test func aLogThatShrankInPlaceIsReadAgain() throws {
    try withCounterDocument { _, log, document in
      for _ in 1...5 { try increment(document) }
      let lines = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n")
      let handle = try #require(FileHandle(forUpdatingAtPath: log))
      try handle.truncate(atOffset: UInt64(lines.prefix(3).map { $0.utf8.count + 1 }.reduce(0, +)))
      try handle.close()
      // Version 6 (counter 5) is now written outside ccsync, as the log says: kept as 4.
      try increment(document)
      #expect(try document.versions().prefix(3).map(\.id) == ["5", "4", "3"])
      #expect(try document.value(ofVersion: "4").value(at: counter) == .number(JSONNumber(5)))
      #expect(try document.value(ofVersion: "3").value(at: counter) == .number(JSONNumber(2)))
    }
  }
}
