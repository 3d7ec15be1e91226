import Foundation
import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

/// I/O errors (issue 7, part 2): a save that fails leaves the target byte-identical (same
/// inode), removes its temp file, renames nothing after a failed `fsync`, and reports
/// ``StorageError/system(_:)`` with the errno and the path; `EINTR` is retried and the save
/// succeeds; the library keeps a failed automatic write pending and retries it once the disk
/// has room again.
@Suite(.serialized) struct FaultIOErrorTests {
  static let old: JSONValue = ["version": "old", "list": [1, 2, 3]]
  static let new: JSONValue = ["version": "new", "list": [], "more": ["a": true]]

  /// One error injected into one call of a save.
  struct Fault: Sendable, CustomStringConvertible {
    var call: String
    var errno: String
    var code: Int32
    var when = 1
    /// The `operation` the error must name.
    var operation: String
    /// Whether the file names the temp file (`.settings.json.tmp-…`) or the directory.
    var namesTemporaryFile = true

    var description: String { "\(call) \(errno) #\(when)" }
  }

  static let failuresBeforeRename: [Fault] = [
    Fault(call: "write", errno: "ENOSPC", code: ENOSPC, operation: "write"),
    Fault(call: "write", errno: "EIO", code: EIO, operation: "write"),
    Fault(call: "write", errno: "EDQUOT", code: EDQUOT, operation: "write"),
    Fault(call: "fsync", errno: "EIO", code: EIO, operation: "fsync"),
    Fault(call: "fsync", errno: "ENOSPC", code: ENOSPC, operation: "fsync"),
    Fault(call: "fchmod", errno: "EIO", code: EIO, operation: "chmod"),
    Fault(call: "rename", errno: "EBUSY", code: EBUSY, operation: "rename"),
    Fault(call: "rename", errno: "EIO", code: EIO, operation: "rename"),
  ]

  @Test(arguments: failuresBeforeRename)
  func failedSaveLeavesTheTargetAndRemovesItsTemporaryFile(fault: Fault) throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      let oldBytes = SharedDocument.documentBytes(Self.old)
      try Data(oldBytes).write(to: URL(fileURLWithPath: path))
      let before = try statusOf(path)

      let run = try runHelperTraced(
        ["save-once", path, Self.new.formatted(.compact)],
        strace: ["-e", "trace=\(fault.call),rename", "-e", "inject=\(fault.call):error=\(fault.errno):when=\(fault.when)"],
        keepTrace: true)

      #expect(run.helper.status == 1 && !run.helper.signaled, "\(run.helper.standardOutput) \(run.helper.standardError)")
      let message = try #require(run.failure)
      #expect(message.contains("\(fault.operation) '"), "\(message)")
      #expect(message.contains("(errno \(fault.code))"), "\(message)")
      #expect(message.contains(directory.file(".settings.json.tmp-")), "does not name the file: \(message)")
      #expect(try contents(of: path) == oldBytes)
      #expect(try statusOf(path).st_ino == before.st_ino)
      #expect(try directory.names().filter { $0 != ".settings.json.history" } == ["settings.json", "settings.json.lock"])
      #expect(try lockIsFree(path))
      if fault.call != "rename" {
        #expect(!run.trace.contains("rename("), "renamed after a failed \(fault.call):\n\(run.trace)")
      }
      FaultTools.report("io-fault.\(fault.call).\(fault.errno)", "target-unchanged")
    }
  }

  /// The directory `fsync` comes after the rename: the new version is in place (readers see
  /// it) but its durability is unknown, so the save still reports the error, naming the
  /// directory. Nothing is left to clean up.
  @Test func failedDirectorySyncIsReportedAfterTheRename() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      try Data(SharedDocument.documentBytes(Self.old)).write(to: URL(fileURLWithPath: path))

      let run = try runHelperTraced(
        ["save-once", path, Self.new.formatted(.compact)], strace: ["-e", "trace=fsync", "-e", "inject=fsync:error=EIO:when=2"])

      let message = try #require(run.failure, "\(run.helper.standardOutput)")
      #expect(message == "failed '\(path)' was replaced, but making it durable failed (a crash may still undo it); "
                + "do not apply the same change again: fsync '\(directory.path)': Input/output error (errno 5)")
      #expect(try contents(of: path) == SharedDocument.documentBytes(Self.new))
      #expect(try directory.names().filter { $0 != ".settings.json.history" } == ["settings.json", "settings.json.lock"])
    }
  }

  /// Setting the same value again after a failed directory `fsync` (the obvious retry of an
  /// idempotent change) writes nothing, but returns success only once the version in place is
  /// durable: the file's `fsync`, then its directory's. Before, it returned with no `fsync`.
  @Test func anUpdateThatChangesNothingStillMakesTheVersionDurable() throws {
    let strace = try FaultTools.strace()
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      writeFile(path, #"{"a": 1}"#)
      let ccsync = try CLI.executable()
      let failed = try ChildProcess.run(
        strace, ["-f", "-qq", "-o", "/dev/null", "-e", "trace=fsync", "-e", "inject=fsync:error=EIO:when=2", ccsync, "set", path, "a", "5"])
      #expect(failed.status == 74 && failed.standardError.contains("making it durable failed"), "\(failed.summary)")

      let trace = directory.file("trace")
      let retry = try ChildProcess.run(strace, ["-f", "-qq", "-y", "-o", trace, "-e", "trace=fsync,rename", ccsync, "set", path, "a", "5"])
      #expect(retry.succeeded, "\(retry.summary)")
      let calls = try String(contentsOfFile: trace, encoding: .utf8).split(separator: "\n").filter { $0.contains("(") }
      #expect(calls.count == 2 && calls.first?.contains("fsync(") == true && calls.first?.contains("<\(path)>") == true
                && calls.last?.contains("<\(directory.path)>") == true, "\(calls)")
      #expect(try String(contentsOfFile: path, encoding: .utf8) == #"{"a": 5}"#, "the file's own layout kept")
    }
  }

  /// A storage's save whose directory `fsync` fails reports `notDurable`, but its version is
  /// in place: the edit it wrote is no longer pending, so a later flush does not write it
  /// again over another process's write of the same field (it used to).
  @Test func aSaveThatWasNotMadeDurableIsNotWrittenAgain() throws {
    let strace = try FaultTools.strace()
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      writeFile(path, #"{"theme": "light", "fontSize": 13, "counter": 0, "tags": []}"#)
      let session = try InteractiveChild(
        strace, ["-f", "-qq", "-o", "/dev/null", "-e", "trace=fsync", "-e", "inject=fsync:error=EIO:when=2",
                 try testHelper(), "session", path, "manual"])
      #expect(session.nextLine(startingWith: "ready") != nil)
      session.request("set counter 7")
      let failure = session.request("save", reply: "failed")
      #expect(failure?.contains("making it durable failed") == true, "\(failure ?? "no reply")")
      #expect(session.request("pending", reply: "pending") == "pending false")
      try SharedDocument(path: path).update { try $0.setValue(99, at: JSONPath(parsing: "counter")) }
      session.request("flush")
      #expect(session.finish() == 0)
      #expect(try fileJSON(path).objectValue?["counter"] == 99)
    }
  }

  /// `EINTR` from the calls a save or an exact update makes is retried: the save succeeds.
  @Test(arguments: ["openat", "flock", "read", "write", "fsync", "fchmod", "fchown", "rename"])
  func interruptedCallsAreRetriedTransparently(call: String) throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("counter.json")
      writeFile(path, #"{"counter": 41}"#)
      if geteuid() == 0 { #expect(chown(path, 65534, 65534) == 0) }  // so that fchown is called

      let run = try runHelperTraced(
        ["update-once", path], strace: ["-e", "trace=\(call)", "-e", "inject=\(call):error=EINTR:when=1..3"], keepTrace: true)

      #expect(run.helper.succeeded && run.helper.standardOutput.hasSuffix("updated 42\n"),
              "\(run.helper.standardOutput) \(run.helper.standardError)")
      #expect(try fileJSON(path).objectValue?["counter"] == 42)
      #expect(try temporaryFiles(of: "counter.json", in: directory) == [])
      let interrupted = run.trace.components(separatedBy: "(INJECTED)").count - 1
      if call != "fchown" || geteuid() == 0 {
        #expect(interrupted >= 1, "no EINTR was injected into \(call):\n\(run.trace)")
      }
      FaultTools.report("eintr.\(call)", interrupted)
    }
  }

  // MARK: A real full disk

  /// A tmpfs of 64 KiB, nearly filled: the write of a larger document comes back short and
  /// then fails with `ENOSPC`. The target is untouched and the temp file removed, so the
  /// space it took is free again.
  @Test func fullFileSystemGivesShortWritesThenENOSPCAndKeepsTheTarget() throws {
    try withTemporaryFileSystem(size: "64k") { mount in
      let path = mount + "/settings.json"
      let oldBytes = SharedDocument.documentBytes(Self.old)
      try SharedFile(path: path).replaceContents(with: oldBytes)
      try fill(mount, leaving: 6 * 1024)
      let big: JSONValue = ["payload": .string(String(repeating: "z", count: 20_000))]

      let run = try runHelperTraced(
        ["save-once", path, big.formatted(.compact)], strace: ["-e", "trace=write"], keepTrace: true)

      let message = try #require(run.failure, "\(run.helper.standardOutput)")
      #expect(message.contains("write '\(mount)/.settings.json.tmp-"), "\(message)")
      #expect(message.hasSuffix("No space left on device (errno 28)"), "\(message)")
      let writes = run.trace.split(separator: "\n").filter { $0.contains("write(") && !$0.contains("write(1,") }
      #expect(writes.contains { $0.contains("= -1 ENOSPC") }, "\(writes)")
      let short = writes.contains { line in
        guard let equals = line.range(of: " = ", options: .backwards), let written = Int(line[equals.upperBound...]) else { return false }
        return written > 0 && written < 20_000
      }
      #expect(short, "no short write before ENOSPC: \(writes)")
      FaultTools.report("enospc.short-write-seen", short)
      #expect(try contents(of: path) == oldBytes)
      #expect(try FileManager.default.contentsOfDirectory(atPath: mount).sorted().filter { $0 != ".settings.json.history" } == ["filler", "settings.json", "settings.json.lock"])
    }
  }

  enum AutomaticMode: String, CaseIterable, Sendable { case immediate, afterIdle }

  /// A `CodableStorage` whose automatic write fails on a full disk keeps the change pending,
  /// reports the error, and writes it by itself once space is freed (retry with backoff).
  @Test(arguments: AutomaticMode.allCases)
  func failedAutomaticWriteStaysPendingAndSucceedsOnceSpaceIsBack(mode: AutomaticMode) throws {
    try withTemporaryFileSystem(size: "64k") { mount in
      let path = mount + "/settings.json"
      struct Settings: Codable, Sendable, Equatable { var theme = "light"; var payload = "" }
      let storage = CodableStorage(
        defaultValue: Settings(), path: path,
        updateMode: mode == .immediate ? .immediate : .afterIdle(.milliseconds(50)),
        options: StorageOptions(watchesForChanges: false, flushesAtExit: false, logger: .silent))
      let errors = Protected<[StorageError]>([])
      storage.onError { error in errors.withLock { $0.append(error) } }
      try storage.save()
      let savedBytes = try contents(of: path)
      try fill(mount, leaving: 4 * 1024)

      storage.wrappedValue.payload = String(repeating: "p", count: 16_000)

      #expect(waitUntil(deadline: .seconds(5)) { errors.withLock { $0.count } >= 2 }, "no failed write and retry")
      #expect(storage.hasPendingChanges)
      guard case .store(.system(let error))? = storage.lastError else {
        Issue.record("expected a system error, got \(String(describing: storage.lastError))")
        return
      }
      #expect(error.code == ENOSPC)
      #expect(error.path?.hasPrefix(mount + "/.settings.json.tmp-") == true, "\(error)")
      #expect(try contents(of: path) == savedBytes)
      #expect(try FileManager.default.contentsOfDirectory(atPath: mount).sorted().filter { $0 != ".settings.json.history" } == ["filler", "settings.json", "settings.json.lock"])

      try FileManager.default.removeItem(atPath: mount + "/filler")

      #expect(waitUntil(deadline: .seconds(15)) { !storage.hasPendingChanges }, "the pending write was not retried")
      #expect(try fileJSON(path).objectValue?["payload"]?.stringValue?.count == 16_000)
      #expect(storage.lastError == nil)
      FaultTools.report("enospc.retries-before-space-\(mode)", errors.withLock { $0.count })
    }
  }

  /// Fills the file system holding `directory` with a file `filler`, leaving about `bytes` free.
  func fill(_ directory: String, leaving bytes: Int) throws {
    var info = statvfs()
    #expect(statvfs(directory, &info) == 0)
    let free = Int(info.f_bavail) * Int(info.f_frsize)
    let size = max(0, free - bytes)
    let descriptor = open(directory + "/filler", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    defer { close(descriptor) }
    let chunk = [UInt8](repeating: 0x66, count: 4096)
    var written = 0
    while written < size {
      let count = chunk.withUnsafeBytes { write(descriptor, $0.baseAddress!, min(4096, size - written)) }
      if count <= 0 { break }
      written += count
    }
  }

  /// On NFS, `flock` is emulated with whole-file `fcntl` locks, and an exclusive one needs a
  /// descriptor open for writing: on the read-only lock file descriptor it fails with EBADF
  /// (flock(2), "NFS details"). The lock file is then opened again read-write, through
  /// /proc/self/fd so that it is the same file, and the save goes on. The EBADF is injected.
  @Test func anExclusiveLockRefusedOnAReadOnlyDescriptorIsTakenReadWrite() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      try Data(SharedDocument.documentBytes(Self.old)).write(to: URL(fileURLWithPath: path))

      let run = try runHelperTraced(
        ["save-once", path, Self.new.formatted(.compact)],
        strace: ["-e", "trace=flock,openat", "-e", "inject=flock:error=EBADF:when=1"], keepTrace: true)

      #expect(run.reportedSuccess, "\(run.helper.standardOutput) \(run.helper.standardError)")
      #expect(try JSONValue(parsing: contents(of: path)) == Self.new)
      #expect(run.trace.contains("/proc/self/fd/") && run.trace.contains("O_RDWR"), "not reopened read-write:\n\(run.trace)")
      #expect(try lockIsFree(path))
    }
  }
}
