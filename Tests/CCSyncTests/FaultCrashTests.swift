import Foundation
import Testing
@testable import CCSync

/// Crash points (issue 7, part 1): a writer killed with `SIGKILL` anywhere in a save leaves
/// the old or the new document, valid; a save that returned success is never lost; the lock
/// is free afterwards; temp files it left are ignored by readers and watchers and removed by
/// the next writer.
///
/// The kills are injected by strace (`inject=CALL:signal=SIGKILL:when=N`, counted from the
/// moment strace attaches, just before the save) at every call of every system call a save
/// makes, and, in ``killedAtRandomMomentsNeverLoseASuccessfulUpdate()``, after random delays.
@Suite(.serialized) struct FaultCrashTests {
  /// Every system call the helper's save makes (see `strace -f -e trace=...` of one save).
  static let saveCalls = ["openat", "flock", "getdents64", "fchown", "fchmod", "write", "fsync", "rename", "close"]

  static let old: JSONValue = ["version": "old", "items": [1, 2, 3], "note": .string(String(repeating: "o", count: 3000))]
  static let new: JSONValue = ["version": "new", "items": [4], "nested": ["deep": ["deeper": true]]]

  /// Puts the old document in place, owned by another user with mode 0640 when the test runs
  /// as root, so that the save also gives its temp file away (`fchown`) and sets its mode.
  static func resetOldDocument(_ path: String) throws {
    try Data(SharedDocument.documentBytes(old)).write(to: URL(fileURLWithPath: path))
    if geteuid() == 0 { #expect(chown(path, 65534, 65534) == 0) }
    #expect(chmod(path, 0o640) == 0)
  }

  @Test(arguments: saveCalls)
  func killedAtEveryCallOfASaveLeavesTheOldOrTheNewDocument(call: String) throws {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.file("settings.json")
    let oldBytes = SharedDocument.documentBytes(Self.old)
    let newBytes = SharedDocument.documentBytes(Self.new)
    let newText = Self.new.formatted(.compact)
    var crashPoints = 0
    var completed = false
    for when in 1...16 {
      try Self.resetOldDocument(path)
      let run = try runHelperTraced(
        ["save-once", path, newText], strace: ["-e", "trace=\(call)", "-e", "inject=\(call):signal=SIGKILL:when=\(when)"])
      let bytes = try contents(of: path)
      let label = "kill at \(call) #\(when)"
      #expect(bytes == oldBytes || bytes == newBytes, "\(label): neither the old nor the new document: \(String(decoding: bytes, as: UTF8.self))")
      if run.reportedSuccess { #expect(bytes == newBytes, "\(label): a save that returned success was lost") }
      if bytes == newBytes {
        let status = try statusOf(path)
        #expect(status.st_mode & 0o7777 == 0o640, "\(label): mode \(String(status.st_mode & 0o7777, radix: 8))")
        if geteuid() == 0 { #expect(status.st_uid == 65534 && status.st_gid == 65534, "\(label): owner") }
      }
      #expect(try lockIsFree(path), "\(label): the lock is still held")
      let read = try SharedDocument(path: path).read()
      #expect(read == Self.old || read == Self.new, "\(label): a reader saw \(String(describing: read))")
      if !run.killed {
        // Past the save's last call of this kind: nothing was injected, the save succeeded.
        #expect(run.helper.succeeded && run.reportedSuccess, "\(label): \(run.helper.standardOutput) \(run.helper.standardError) \(run.strace.standardError)")
        completed = true
        break
      }
      crashPoints += 1
    }
    #expect(completed, "the save makes more than 15 \(call) calls?")
    #expect(crashPoints >= 1, "a save makes no \(call) call: the list of crash points is stale")
    FaultTools.report("crash-points.\(call)", crashPoints)

    // Leftover temp files of the killed saves: once old enough, the next writer removes them.
    for name in try temporaryFiles(of: "settings.json", in: directory) { backdate(directory.file(name), by: 60) }
    let next = try ChildProcess.run(FaultTools.helper(), ["update-once", path])
    #expect(next.succeeded, "\(next.standardOutput) \(next.standardError)")
    #expect(try temporaryFiles(of: "settings.json", in: directory) == [])
  }
}
