import Foundation
import Testing
@testable import CCSync

@Suite struct SharedDocumentTests {
  struct Refused: Error {}

  /// A file system can give a newer version the identity of one seen before: the inode a
  /// replaced version freed, the same size, and (with coarse timestamps, as ext4 had before
  /// Linux 6.13) the same times. This kernel stamps finely, so the collision is set up by hand:
  /// the identity recorded for the version seen is made the newer version's. While that
  /// identity is recent enough to recur, a look that trusts identities (the periodic re-check,
  /// polling) still compares the bytes; a document told identities never recur is fooled,
  /// which is what the first half shows.
  ///
  /// The collision is recorded as seen now, after the newer version's change, as a look at
  /// it would have been; a window of a minute stands in for the 2 s default so that a test
  /// process stalled for seconds under load still looks within it.
  @Test func aRecentIdentityIsConfirmedByContent() throws {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.file("settings.json")
    for (window, fooled) in [(Int64(0), true), (Int64(60_000_000_000), false)] {
      writeFile(path, #"{"theme": "old"}"#)
      let document = SharedDocument(file: SharedFile(path: path), identityRecurrenceWindow: window)
      #expect(try document.read() == ["theme": "old"])
      writeFile(path, #"{"theme": "new"}"#)  // same size
      let newer = try #require(try SharedFile(path: path).identity())
      document.tracking.withLock { state in  // the collision
        state.seen?.identity = newer
        state.seen?.seenAt = FileSystem.currentTime()
      }
      let observation = document.readIfChanged(contentMayDiffer: false)
      let changedTo: JSONValue?
      if case .changed(let value) = observation { changedTo = value } else { changedTo = nil }
      if fooled {
        #expect(changedTo == nil, "with identities trusted, the collision hides the change")
      } else {
        #expect(changedTo == ["theme": "new"], "a recent identity was trusted without the bytes")
      }
    }
  }

  @Test func anUpdateThatThrowsCreatesNoFile() throws {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.file("doc.json")
    #expect(throws: Refused.self) { try SharedDocument(path: path).update { _ in throw Refused() } }
    #expect(!FileManager.default.fileExists(atPath: path))
  }

  @Test func missingFilePolicyFailRunsNothing() throws {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.file("doc.json")
    var ran = false
    #expect(throws: StorageError.self) {
      try SharedDocument(path: path).update(missingFile: .fail) { _ in ran = true }
    }
    #expect(!ran)
    #expect(!FileManager.default.fileExists(atPath: path))
  }

  @Test func writePoliciesDecideWhetherAReorderingIsWritten() throws {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.file("doc.json")
    writeFile(path, "{\"a\": 1, \"b\": 2}")
    let document = SharedDocument(path: path)
    let reordered: JSONValue = .object(JSONObject([("b", 2), ("a", 1)]))
    try document.update { $0 = reordered }
    #expect(try String(contentsOfFile: path, encoding: .utf8) == "{\"a\": 1, \"b\": 2}")
    try document.update(writes: .whenTextDiffers) { $0 = reordered }
    #expect(try String(contentsOfFile: path, encoding: .utf8) == "{\n  \"b\": 2,\n  \"a\": 1\n}\n")
  }

  @Test func anInvalidFileIsLeftUntouchedUnderTheFailPolicy() throws {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.file("doc.json")
    writeFile(path, "{oops")
    #expect(throws: StorageError.self) { try SharedDocument(path: path).update { $0 = ["x": 1] } }
    #expect(try String(contentsOfFile: path, encoding: .utf8) == "{oops")
    #expect(try directory.names() == ["doc.json", "doc.json.lock"])
  }
}
