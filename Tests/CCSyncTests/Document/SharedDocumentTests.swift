import Foundation
import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

@Suite struct SharedDocumentTests {
  struct Refused: Error {}

  /// A document no reader would accept (arrays and objects nested deeper than the parser's
  /// 512 levels) is not written, by an update or a replace: the file stays as it was and the
  /// writer can go on. Exactly 512 levels is written and read back.
  @Test func aDocumentNestedDeeperThanReadersAcceptIsNotWritten() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("deep.json")
      writeFile(path, #"{"n": 1}"#)
      let document = SharedDocument(path: path)
      func nested(_ levels: Int) -> JSONValue {
        var value: JSONValue = []
        for _ in 1..<levels { value = [value] }
        return value
      }
      let before = try contents(of: path)
      let error = #expect(throws: StorageError.self) { try document.update { $0 = ["deep": nested(512), "n": 2] } }
      #expect(error?.description.contains("513 levels") == true, "\(String(describing: error))")
      #expect(throws: StorageError.self) { try document.replace(with: nested(513)) }
      #expect(try contents(of: path) == before)
      try document.update { try $0.setValue(3, at: JSONPath(parsing: "n")) }
      try document.update { $0 = ["deep": nested(511), "n": 4] }
      #expect(try SharedDocument(path: path).read()?.objectValue?["n"] == 4)
    }
  }

  /// The new version inherits the file's metadata as it is when the update writes, not as
  /// it was when it read: a chmod (or, as root, a chown) made while the update ran is kept.
  @Test func metadataChangedWhileAnUpdateRunsIsKept() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("meta.json")
      writeFile(path, #"{"n": 1}"#)
      #expect(chmod(path, 0o644) == 0)
      let owner: uid_t = geteuid() == 0 ? 65534 : geteuid()
      try SharedDocument(path: path).update { json in
        // An administrator, meanwhile (the update read the file before this).
        #expect(chmod(path, 0o600) == 0)
        if geteuid() == 0 { #expect(chown(path, owner, owner) == 0) }
        try json.setValue(2, at: JSONPath(parsing: "n"))
      }
      let status = try statusOf(path)
      #expect(status.st_mode & 0o7777 == 0o600)
      #expect(status.st_uid == owner)
    }
  }

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
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      for (window, fooled) in [(Int64(0), true), (Int64(60_000_000_000), false)] {
        writeFile(path, #"{"theme": "old"}"#)
        let document = SharedDocument(file: SharedFile(path: path), identityRecurrenceWindow: window)
        #expect(try document.read() == ["theme": "old"])
        writeFile(path, #"{"theme": "new"}"#)  // same size
        let newer = try #require(try SharedFile(path: path).identity())
        document.tracking.withLock { state in  // the collision
          state.seen?.identity = VersionIdentity(FileVersion(newer))  // seen now
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
  }

  /// Two documents on one file take turns, as two processes do: each update reads the other's
  /// version, which differs from its own last write in one top-level value, and parses and
  /// prints by that value (see `JSONDocumentLayout`). Between the turns another tool writes
  /// its own formatting, a change inside a nested value, a value in its own spelling, and
  /// invalid text. Every change is kept, the file is always what printing the whole document
  /// gives, and what the shortcut parsed is always what parsing the whole file gives.
  @Test func updatesTakingTurnsWithOtherWritersKeepEveryChange() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("doc.json")
      let documents = [SharedDocument(path: path), SharedDocument(path: path)]
      try documents[0].update { $0 = ["counter": 0, "name": "svc", "nested": ["list": [1, 2], "on": true], "ratio": 1.5] }
      var expectedName: JSONValue = "svc"
      for turn in 1...24 {
        switch turn {
        case 5: writeFile(path, #"{"counter":4,"name":"compact","nested":{"list":[1,2],"on":true},"ratio":1.5}"#); expectedName = "compact"
        case 9:
          // The compact layout written at turn 5 is kept by every writer since.
          let text = try String(contentsOfFile: path, encoding: .utf8).replacingOccurrences(of: #""on":true"#, with: #""on":false"#)
          writeFile(path, text)
        case 13:
          let text = try String(contentsOfFile: path, encoding: .utf8).replacingOccurrences(of: #""ratio":1.5"#, with: #""ratio":1.50"#)
          writeFile(path, text)
        case 17:
          let valid = try String(contentsOfFile: path, encoding: .utf8)
          writeFile(path, valid.replacingOccurrences(of: #""name":"#, with: #""name":,"#))
          #expect(throws: StorageError.self) { try documents[turn % 2].update { try $0.setValue(0, at: JSONPath(tokens: ["counter"])) } }
          writeFile(path, valid)
        default: break
        }
        let seen = try documents[turn % 2].update { json -> JSONValue in
          let counter = json.objectValue?["counter"]?.numberValue?.int64Value ?? -100
          try json.setValue(.number(JSONNumber(counter + 1)), at: JSONPath(tokens: ["counter"]))
          if turn % 4 == 0 { try json.setValue(.string("turn \(turn)"), at: JSONPath(tokens: ["name"])) }
          return json
        }
        if turn % 4 == 0 { expectedName = .string("turn \(turn)") }
        let bytes = try contents(of: path)
        let whole = try JSONValue(parsing: bytes)
        #expect(whole == seen, "turn \(turn)")
        // The printer's text until another writer wrote its own compact layout (turn 5): from
        // then on that layout is kept, only the changed values' text rewritten.
        if turn < 5 {
          #expect(bytes == SharedDocument.documentBytes(whole), "turn \(turn): not the printer's text")
        } else {
          #expect(!bytes.contains(UInt8(ascii: "\n")), "turn \(turn): the compact layout was not kept")
        }
        #expect(whole.objectValue?["counter"] == .number(JSONNumber(Int64(turn))), "turn \(turn)")
        #expect(whole.objectValue?["name"] == expectedName, "turn \(turn)")
      }
      let final = try #require(try JSONValue(parsing: try contents(of: path)).objectValue)
      #expect(final["nested"] == ["list": [1, 2], "on": false])
      #expect(final["ratio"]?.numberValue?.text == "1.50")
    }
  }

  /// A process that writes keeps the document of the versions it reads afterwards (the next
  /// update starts from it without a parse), reads a version changed in one top-level value by
  /// parsing that value, and gets what the whole parse gives; one that only reads keeps no
  /// document.
  @Test func readsAfterAWriteKeepTheDocumentAndParseOnlyWhatChanged() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("doc.json")
      let writer = SharedDocument(path: path)
      let other = SharedDocument(path: path)
      let reader = SharedDocument(path: path)
      try writer.update { $0 = ["counter": 1, "name": "svc", "list": [1, 2]] }
      #expect(try reader.read() == ["counter": 1, "name": "svc", "list": [1, 2]])
      try other.update { try $0.setValue(2, at: JSONPath(tokens: ["counter"])) }

      guard case .changed(let value) = writer.readIfChanged(contentMayDiffer: true) else {
        Issue.record("the other writer's version was not seen")
        return
      }
      let whole = try JSONValue(parsing: try contents(of: path))
      #expect(value.printsIdentically(to: whole))
      let kept = writer.tracking.withLock { $0.seen }
      #expect(kept?.document.map { $0.printsIdentically(to: whole) } == true, "the writer keeps the document")
      #expect(kept?.layout == JSONDocumentLayout.print(whole).layout.map(TextLayout.printed), "and the layout of the printer's text")

      guard case .changed = reader.readIfChanged(contentMayDiffer: true) else {
        Issue.record("the reader did not see the change")
        return
      }
      #expect(reader.tracking.withLock { $0.seen?.document } == nil, "a reader keeps no document")

      writeFile(path, #"{"counter": 3, "name": "foreign", "list": [1, 2]}"#)  // another tool's format
      #expect(try writer.read() == ["counter": 3, "name": "foreign", "list": [1, 2]])
      #expect(writer.tracking.withLock { $0.seen?.layout } == nil, "no layout for text that is not the printer's")
      try writer.update { try $0.setValue(4, at: JSONPath(tokens: ["counter"])) }
      #expect(try JSONValue(parsing: try contents(of: path)) == ["counter": 4, "name": "foreign", "list": [1, 2]])
      // The text it edited in place: it keeps where the members lie, and reads another
      // process's change of one value by that value.
      let edited = try contents(of: path)
      #expect(String(decoding: edited, as: UTF8.self) == #"{"counter": 4, "name": "foreign", "list": [1, 2]}"#)
      let editedLayout = LosslessLayout.scan(edited, syntax: .strict, document: ["counter": 4, "name": "foreign", "list": [1, 2]])
      #expect(writer.tracking.withLock { $0.seen?.layout } == editedLayout.map(TextLayout.edited), "the layout of the text it wrote")
      try other.update { try $0.setValue(["x": [true]], at: JSONPath(tokens: ["name"])) }
      guard case .changed(let otherValue) = writer.readIfChanged(contentMayDiffer: true) else {
        Issue.record("the other writer's version was not seen")
        return
      }
      let otherBytes = try contents(of: path)
      let otherWhole = try JSONValue(parsing: otherBytes)
      #expect(otherValue.printsIdentically(to: otherWhole))
      #expect(writer.tracking.withLock { $0.seen?.layout } == LosslessLayout.scan(otherBytes, syntax: .strict, document: otherWhole).map(TextLayout.edited),
              "parsed by way of the layout, which moved with the text")
    }
  }

  @Test func anUpdateThatThrowsCreatesNoFile() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("doc.json")
      #expect(throws: Refused.self) { try SharedDocument(path: path).update { _ in throw Refused() } }
      #expect(!FileManager.default.fileExists(atPath: path))
    }
  }

  @Test func missingFilePolicyFailRunsNothing() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("doc.json")
      var ran = false
      #expect(throws: StorageError.self) {
        try SharedDocument(path: path).update(missingFile: .fail) { _ in ran = true }
      }
      #expect(!ran)
      #expect(!FileManager.default.fileExists(atPath: path))
    }
  }

  @Test func writePoliciesDecideWhetherAReorderingIsWritten() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("doc.json")
      writeFile(path, "{\"a\": 1, \"b\": 2}")
      let document = SharedDocument(path: path)
      let reordered: JSONValue = .object(JSONObject([("b", 2), ("a", 1)]))
      try document.update { $0 = reordered }
      #expect(try String(contentsOfFile: path, encoding: .utf8) == "{\"a\": 1, \"b\": 2}")
      try document.update(writes: .whenTextDiffers) { $0 = reordered }
      #expect(try String(contentsOfFile: path, encoding: .utf8) == "{\n  \"b\": 2,\n  \"a\": 1\n}\n")
    }
  }

  @Test func anInvalidFileIsLeftUntouchedUnderTheFailPolicy() throws {
    try withTemporaryDirectory { directory throws in
      let path = directory.file("doc.json")
      writeFile(path, "{oops")
      #expect(throws: StorageError.self) { try SharedDocument(path: path).update { $0 = ["x": 1] } }
      #expect(try String(contentsOfFile: path, encoding: .utf8) == "{oops")
      #expect(try directory.names() == ["doc.json", "doc.json.lock"])
    }
  }
}
