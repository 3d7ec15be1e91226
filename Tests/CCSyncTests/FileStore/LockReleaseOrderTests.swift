import Foundation
import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

/// The lock covers a write's read, temp file and rename; closing the replaced version and the
/// directory's `fsync` come after the lock is released (see `AfterUnlock`), and the call
/// returns only once they are done.
@Suite struct LockReleaseOrderTests {
  /// The counter in the file at `path`, or `nil` while it cannot be read.
  static func counter(at path: String) -> Int? {
    guard let bytes = try? contents(of: path), case .number(let number)? = (try? JSONValue(parsing: bytes))?.objectValue?["counter"] else {
      return nil
    }
    return Int(number.text)
  }

  /// As strace sees one exact update: file `fsync`, rename, unlock, close of the replaced
  /// version, directory `fsync`, and only then the helper's report that the update returned.
  @Test func directorySyncAndClosingTheReplacedFileComeAfterTheUnlock() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      try Data(#"{"counter": 1}"#.utf8).write(to: URL(fileURLWithPath: path))

      let run = try runHelperTraced(
        ["update-once", path], strace: ["-y", "-e", "trace=fsync,rename,flock,close,write"], keepTrace: true)

      #expect(run.helper.standardOutput.contains("updated 2"), "\(run.helper.standardOutput) \(run.helper.standardError)")
      let lines = run.trace.split(separator: "\n").map(String.init)
      func first(_ description: String, _ matches: (String) -> Bool) -> Int? {
        let index = lines.firstIndex(where: matches)
        #expect(index != nil, "no \(description) in the trace:\n\(run.trace)")
        return index
      }
      let temporaryPrefix = directory.path + "/.settings.json.tmp-"
      let fileSync = first("fsync of the temp file") { $0.contains("fsync(") && $0.contains(temporaryPrefix) }
      let rename = first("rename") { $0.contains("rename(\"\(temporaryPrefix)") }
      let unlock = first("unlock of the lock file") { $0.contains("flock(") && $0.contains("\(path).lock>") && $0.contains("LOCK_UN") }
      let closeReplaced = first("close of the replaced version") { $0.contains("close(") && $0.contains("<\(path)") && $0.contains("deleted") }
      let directorySync = first("fsync of the directory") { $0.contains("fsync(") && $0.contains("<\(directory.path)>") }
      let report = first("the helper's report") { $0.contains("write(1") && $0.contains("updated 2") }
      guard let fileSync, let rename, let unlock, let closeReplaced, let directorySync, let report else { return }
      #expect(fileSync < rename && rename < unlock, "the rename must follow the file's fsync, under the lock")
      #expect(unlock < closeReplaced && unlock < directorySync, "closing and the directory fsync wait for the unlock")
      #expect(directorySync < report, "the update returned before its directory fsync")
    }
  }

  /// While one writer's directory `fsync` is held up (strace delays it 8 s), another writer
  /// takes the lock, reads the first one's version and commits on top of it; the first one
  /// reports success only after its `fsync`, and no update is lost.
  @Test func anotherWriterCommitsWhileADirectorySyncIsUnderWay() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      try Data(#"{"counter": 1}"#.utf8).write(to: URL(fileURLWithPath: path))
      var second: ChildProcess.Outcome?

      let run = try runHelperTraced(
        ["update-once", path], strace: ["-e", "trace=fsync", "-e", "inject=fsync:delay_enter=8000000:when=2"]
      ) { first in
        #expect(waitUntil(deadline: .seconds(20)) { Self.counter(at: path) == 2 }, "the first writer never renamed")
        second = try ChildProcess.run(testHelper(), ["update-once", path], deadline: .seconds(30))
        #expect(!first.standardOutput.contains("updated"), "the first writer returned before the second finished")
      }

      #expect(second?.standardOutput == "updated 3\n", "\(second?.standardOutput ?? "") \(second?.standardError ?? "")")
      #expect(run.helper.standardOutput.contains("updated 2"), "\(run.helper.standardOutput) \(run.helper.standardError)")
      #expect(Self.counter(at: path) == 3)
      #expect(try lockIsFree(path))
    }
  }
}
