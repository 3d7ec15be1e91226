import Foundation
import Testing
@testable import CCSync

/// History, diff and rollback on a file, with real processes: every version kept as a link
/// in `.NAME.history/`, its author known, any one restored byte for byte.
@Suite struct CLIHistoryTests {
  /// The fields of each `ccsync log` line: id, time, author, paths.
  private func log(_ arguments: [String]) throws -> [[String]] {
    let outcome = try CLI.run(["log"] + arguments)
    #expect(outcome.status == 0, "\(outcome.summary)")
    return CLI.lines(outcome.standardOutput).filter { !$0.isEmpty }.map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
  }

  /// 30 writes by three processes at once to a file kept with `--keep 40`: `log` lists all
  /// 30, newest first, each with its author's pid, and each kept version is a link, not a copy.
  @Test func thirtyWritesByThreeProcessesAreAllListedWithTheirAuthors() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      #expect(try CLI.run(["set", "--keep", "40", file, "n", "0"]).status == 0)
      let writers = try (0..<3).map { writer in
        try ChildProcess.start("/bin/sh", ["-c", "for i in $(seq 1 \(writer == 0 ? 9 : 10)); do '\(try CLI.executable())' set '\(file)' w\(writer) $i || exit 1; done"])
      }
      for writer in writers { #expect(writer.wait(deadline: .seconds(60)).status == 0) }
      let lines = try log([file])
      #expect(lines.count == 30, "\(lines.count) lines")
      #expect(lines.map { Int($0[0]) } == (1...30).reversed().map { $0 }, "\(lines.map { $0[0] })")
      #expect(lines.allSatisfy { $0.count == 4 && $0[2].contains("pid ") && $0[2].contains("(ccsync)") }, "\(lines.prefix(3))")
      #expect(Set(lines.map { $0[2] }).count >= 3, "the authors are the processes that wrote")
      let kept = try FileManager.default.contentsOfDirectory(atPath: directory.file(".c.json.history")).filter { $0.hasSuffix(".json") }
      #expect(kept.count == 29, "the current version is the file itself: \(kept.count)")
      let status = try FileManager.default.attributesOfItem(atPath: directory.file(".c.json.history/29.json"))
      #expect((status[.referenceCount] as? Int) == 1, "a kept version is the replaced file itself")
    }
  }

  /// After a power cut the links and the lines of `versions.log` may disagree (SEMANTICS.md,
  /// "History"): here the log lost its last lines while the links stayed, and a link was
  /// made again by another program. A file under an id that is not the version its line
  /// names is never shown as that version: a write that takes the id replaces it, and `log`,
  /// `diff` and `rollback` pass over one whose line names another file.
  @Test func aKeptFileThatIsNotItsLinesVersionIsNeverShownAsIt() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      for value in 1...5 { #expect(try CLI.run(["set", file, "n", String(value)]).status == 0) }
      // Versions 1 to 4 are kept (n = 1 to 4) and 5 is the file; the log keeps lines 1 and 2.
      let history = directory.file(".c.json.history")
      let lines = String(decoding: CLI.bytes(history + "/versions.log") ?? Data(), as: UTF8.self).split(separator: "\n")
      try CLI.write(lines.prefix(2).joined(separator: "\n") + "\n", to: history + "/versions.log")
      // The next write keeps n = 5 as version 3 (written, as the log now says, outside
      // ccsync), where 3.json held n = 3, and writes version 4.
      #expect(try CLI.run(["set", file, "n", "6"]).status == 0)
      #expect(try log([file]).map { $0[0] } == ["4", "3", "2", "1"])
      let diff = try CLI.run(["diff", file, "3", "4"])
      #expect(diff.status == 0 && diff.standardOutput.contains("5 -> 6"), "\(diff.summary)")
      // A copy under id 2 (another file than its line names) is not version 2. Made before
      // the link goes, so that it cannot get the inode number version 2 frees.
      try CLI.write("{\"n\": 99}\n", to: history + "/copy")
      #expect(rename(history + "/copy", history + "/2.json") == 0)
      #expect(try log([file]).map { $0[0] } == ["4", "3", "1"])
      #expect(try CLI.run(["rollback", file, "--to", "2"]).status == 66)
      #expect(try CLI.run(["get", file, "n"]).standardOutput == "6\n")
    }
  }

  @Test func byDefaultTwentyVersionsAreKept() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      for value in 1...25 { #expect(try CLI.run(["set", file, "n", String(value)]).status == 0) }
      let lines = try log([file])
      #expect(lines.count == 21, "the current version and the 20 before it: \(lines.count)")
      #expect(lines.last?[0] == "5")
      let old = try CLI.run(["rollback", file, "--to", "2"])
      #expect(old.status == 66 && old.standardError.contains("the oldest kept is 5"), "\(old.summary)")
      // --keep 0 turns it off and drops what was kept.
      #expect(try CLI.run(["set", "--keep", "0", file, "n", "26"]).status == 0)
      #expect(try CLI.run(["set", file, "n", "27"]).status == 0)
      #expect(try log([file]).count <= 2)
    }
  }

  /// A limit of 0 set before a file has any history (the library's `setHistoryLimit(0)`
  /// before the first write) turns it off too: it did nothing there, and the writes that
  /// followed kept 20 versions.
  @Test func aLimitOfZeroSetBeforeAnyHistoryKeepsNothing() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      try CLI.write(#"{"n": 0}"#, to: file)
      let document = SharedDocument(path: file)
      try document.setHistoryLimit(0)
      for value in 1...4 { try document.update { try $0.setValue(.number(JSONNumber(value)), at: JSONPath(parsing: "n")) } }
      let folder = directory.file(".c.json.history")
      let kept = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter { $0.hasSuffix(".json") }
      #expect(kept.isEmpty, "versions kept with a limit of 0: \(kept)")
      let lines = try log([file])
      #expect(lines.count == 1, "only the current version: \(lines)")
    }
  }

  @Test func aRollbackRestoresTheBytesAndIsItselfInTheLog() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      let original = "{\n    \"server\": {\"port\": 8080, \"host\": \"a\"},\n    \"name\": \"x\"\n}\n"
      try CLI.write(original, to: file)
      #expect(try CLI.run(["set", file, "server.port", "9090"]).status == 0)
      #expect(try CLI.run(["set", file, "name", "y"]).status == 0)
      let lines = try log([file])
      #expect(lines.count == 3 && lines[2][2] == "-", "the first version was written by another program: \(lines)")
      let first = lines[2][0]
      #expect(try CLI.run(["rollback", file, "--to", first]).status == 0)
      #expect(CLI.bytes(file) == Data(original.utf8), "byte-identical")
      let after = try log([file])
      #expect(after.count == 4 && after[0][3].hasSuffix("(rollback of \(first))"), "\(after.first ?? [])")
      // With a path, only that value goes back.
      #expect(try CLI.run(["set", file, "server.port", "1"]).status == 0)
      #expect(try CLI.run(["set", file, "name", "z"]).status == 0)
      #expect(try CLI.run(["rollback", file, "--to", first, "server.port"]).status == 0)
      #expect(try CLI.run(["get", "-c", file]).standardOutput == #"{"server":{"port":8080,"host":"a"},"name":"z"}"# + "\n")
      // log PATH: only the versions that changed it.
      let ports = try log([file, "server.port"])
      #expect(ports.allSatisfy { $0[3].contains("server") }, "\(ports)")
      #expect(!ports.contains { $0[3] == "name" })
    }
  }

  @Test func diffShowsPathsOrAJSONPatch() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      #expect(try CLI.run(["set", file, "a", "1"]).status == 0)
      #expect(try CLI.run(["set", file, "b", "{\"x\": true}"]).status == 0)
      #expect(try CLI.run(["delete", file, "a"]).status == 0)
      let plain = try CLI.run(["diff", file])
      #expect(plain.status == 0 && plain.standardOutput == "a: 1 -> (absent)\n", "\(plain.summary)")
      let patch = try CLI.run(["diff", "--json", file, "1", "3"])
      #expect(patch.standardOutput == #"[{"op":"remove","path":"/a"},{"op":"add","path":"/b","value":{"x":true}}]"# + "\n", "\(patch.summary)")
      #expect(try CLI.run(["diff", "--exit-code", file, "1", "2"]).status == 1)
      #expect(try CLI.run(["diff", "--exit-code", file, "2", "2"]).status == 0)
      let unknown = try CLI.run(["diff", file, "77", "2"])
      #expect(unknown.status == 66 && unknown.standardError.contains("no version '77'"), "\(unknown.summary)")
    }
  }

  @Test func aRollbackTheGateRefusesWritesNothing() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      #expect(try CLI.run(["set", file, "port", "\"eighty\""]).status == 0)
      #expect(try CLI.run(["set", file, "port", "80"]).status == 0)
      let before = CLI.bytes(file)
      let refused = try CLI.run(["rollback", file, "--to", "1", "--check", "! grep -q eighty"])
      #expect(refused.status == 65, "\(refused.summary)")
      #expect(CLI.bytes(file) == before)
      #expect(try log([file]).count == 2)
    }
  }

  /// A history folder that cannot be written does not stop the write: it is reported once.
  @Test func aHistoryThatCannotBeKeptIsReportedAndTheWriteGoesOn() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      #expect(try CLI.run(["set", file, "a", "1"]).status == 0)
      try FileManager.default.removeItem(atPath: directory.file(".c.json.history"))
      try "in the way".write(toFile: directory.file(".c.json.history"), atomically: true, encoding: .utf8)
      let outcome = try CLI.run(["set", file, "a", "2"])
      #expect(outcome.status == 0, "\(outcome.summary)")
      #expect(outcome.standardError.contains("history") && outcome.standardError.contains("cannot be kept"), "\(outcome.summary)")
      #expect(try CLI.run(["get", file, "a"]).standardOutput == "2\n")
    }
  }

  @Test func aFailedWriteMakesNoHistoryFolder() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      try CLI.write("{\"a\": 1}\n", to: file)
      #expect(try CLI.run(["set", file, "a", "{oops"]).status == 65)
      #expect(try CLI.run(["set", "--check", "false", "--keep", "5", file, "a", "2"]).status == 65)
      #expect(!FileManager.default.fileExists(atPath: directory.file(".c.json.history")))
    }
  }
}

/// The library's side: a storage lists its document's versions and rolls back to one.
@Suite struct StorageHistoryTests {
  @Test func aStorageRollsBackToAnEarlierVersionAndTakesIt() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      let storage = CodableStorage(defaultValue: SharedSettings(), path: path, updateMode: .manual, options: watchingOptions)
      storage.wrappedValue.theme = "first"
      try storage.save()
      storage.wrappedValue.theme = "second"
      try storage.save()
      let versions = try storage.versions()
      #expect(versions.count == 2 && versions[0].isCurrent && versions[0].author?.pid == getpid(), "\(versions)")
      try storage.rollback(to: versions[1].id)
      #expect(storage.wrappedValue.theme == "first")
      #expect(try storage.versions(limit: 1).first?.rollbackOf == versions[1].id)
      #expect(throws: StorageError.self) { try storage.rollback(to: "999") }
    }
  }
}
