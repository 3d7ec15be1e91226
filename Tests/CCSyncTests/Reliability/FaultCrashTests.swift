import Foundation
import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

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
    try withTemporaryDirectory { directory in
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
      let next = try ChildProcess.run(testHelper(), ["update-once", path])
      #expect(next.succeeded, "\(next.standardOutput) \(next.standardError)")
      #expect(try temporaryFiles(of: "settings.json", in: directory) == [])
    }
  }

  /// Writers doing exact updates in a loop (through `SharedDocument` and, every other round,
  /// a watching `.immediate` `CodableStorage` that also edits another field), killed after a
  /// random delay, round after round on one file: the counter in the file is always the last one a writer reported, or one
  /// more (killed after its rename, before it could report); never less. The file is valid
  /// every time, the lock free, and the next writer removes old leftovers.
  ///
  /// `CCSYNC_FAULT_KILLS` sets the number of rounds (default 200, about 15 s; the issue asks
  /// for 1000: `CCSYNC_FAULT_KILLS=1000 swift test --filter FaultCrashTests`).
  /// `CCSYNC_FAULT_SEED` repeats a run's delays.
  @Test func killedAtRandomMomentsNeverLoseASuccessfulUpdate() throws {
    let rounds = FaultTools.count("CCSYNC_FAULT_KILLS", default: 200)
    let seed = ProcessInfo.processInfo.environment["CCSYNC_FAULT_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 1...1_000_000)
    var random = SeededJSONRandom(seed: seed)
    try withTemporaryDirectory { directory in
      let path = directory.file("counter.json")
      var counter: Int64 = 0
      var reported = 0
      var unreported = 0
      var leftoversSeen = 0
      var lost: Int64 = 0
      for round in 0..<rounds {
        // Odd rounds go through CodableStorage (its watcher, its immediate writes), even ones
        // through SharedDocument.
        let child = try ChildProcess.start(testHelper(), ["update-loop", path] + (round % 2 == 1 ? ["--storage"] : []))
        #expect(waitUntil(deadline: .seconds(20)) { child.standardOutput.contains("ready") })
        usleep(UInt32.random(in: 0...15_000, using: &random))
        kill(child.process.processIdentifier, SIGKILL)
        let outcome = child.wait()
        let label = "round \(round) (seed \(seed))"
        #expect(outcome.signaled, "\(label): \(outcome.standardOutput) \(outcome.standardError)")
        let counts = outcome.standardOutput.split(separator: "\n").compactMap { line in
          line.hasPrefix("counted ") ? Int64(line.dropFirst("counted ".count)) : nil
        }
        let lastReported = counts.last ?? counter
        reported += counts.count
        let json = try fileJSONIfPresent(path)
        let now = json?.objectValue?["counter"]?.numberValue?.int64Value ?? 0
        #expect(now == lastReported || now == lastReported + 1, "\(label): file has \(now), last reported \(lastReported)")
        if now == lastReported + 1 { unreported += 1 }
        lost += max(0, lastReported - now)
        #expect(try lockIsFree(path), "\(label): the lock is still held")
        leftoversSeen = max(leftoversSeen, try temporaryFiles(of: "counter.json", in: directory).count)
        counter = now
      }
      for name in try temporaryFiles(of: "counter.json", in: directory) { backdate(directory.file(name), by: 60) }
      let next = try ChildProcess.run(testHelper(), ["update-once", path])
      #expect(next.standardOutput == "updated \(counter + 1)\n", "\(next.standardOutput) \(next.standardError)")
      #expect(try temporaryFiles(of: "counter.json", in: directory) == [])
      FaultTools.report("random-kills", rounds)
      FaultTools.report("random-kills.updates-reported", reported)
      FaultTools.report("random-kills.saved-but-unreported", unreported)
      FaultTools.report("random-kills.most-leftovers", leftoversSeen)
      #expect(lost == 0)
      FaultTools.report("random-kills.updates-lost", lost)
    }
  }

  @Test func leftoverTemporaryFilesAreIgnoredByReadersAndWatchersAndRemovedByTheNextWriter() throws {
    try withTemporaryDirectory { directory in
      try withTemporaryDirectory { elsewhere in
        let path = directory.file("settings.json")
        try Self.resetOldDocument(path)
        let watcher = try InteractiveChild(testHelper(), ["watch", path, "--safety-ms", "0"])
        #expect(watcher.nextLine(startingWith: "ready") != nil)

        // Three saves killed after writing their temp file, before its fsync (so before the rename).
        for _ in 0..<3 {
          let run = try runHelperTraced(
            ["save-once", path, Self.new.formatted(.compact)], strace: ["-e", "trace=fsync", "-e", "inject=fsync:signal=SIGKILL:when=1"])
          #expect(run.killed)
        }
        let leftovers = try temporaryFiles(of: "settings.json", in: directory)
        #expect(leftovers.count == 3)
        #expect(try contents(of: path) == SharedDocument.documentBytes(Self.old))
        #expect(try SharedDocument(path: path).read() == Self.old)
        // A leftover that woke the watcher would show as a first wake with the old document:
        // checked at the end, where the first wake must be the next writer's.

        // Old leftovers go; a young one, one a live writer holds, look-alike names and a symlink stay.
        for name in leftovers { backdate(directory.file(name), by: 60) }
        let young = try runHelperTraced(
          ["save-once", path, Self.new.formatted(.compact)], strace: ["-e", "trace=fsync", "-e", "inject=fsync:signal=SIGKILL:when=1"])
        #expect(young.killed)
        let youngName = try #require(try temporaryFiles(of: "settings.json", in: directory).first { !leftovers.contains($0) })
        let held = directory.file(".settings.json.tmp-LockHeld")
        writeFile(held, "a live writer's")
        let holder = open(held, O_RDONLY | O_CLOEXEC)
        #expect(holder >= 0 && flock(holder, LOCK_EX) == 0)
        defer { close(holder) }
        let victim = elsewhere.file("victim")
        writeFile(victim, "victim")
        try symlink(directory.file(".settings.json.tmp-Symlink1"), to: victim)
        let lookAlikes = [".settings.json.tmp-short", ".settings.json.tmp-ABCDEFGHI", ".settings.json.tmp-ABCD-FGH",
                          ".other.json.tmp-ABCDEFGH", "settings.json.tmp-ABCDEFGH", ".settings.json.tmp-ABCDEFGH.json",
                          ".settings.json.corrupt-.tmp-ABCDEFGH", ".settings.json.corrupt-2026 01.tmp-ABCDEFGH",
                          ".settings.json.corrupt-x.tmp-my notes", ".settings.json.corrupt-x.tmp-ABCD-FGH",
                          "settings.json.corrupt-20260101T000000.000Z"]
        for name in lookAlikes { writeFile(directory.file(name), "not ours") }
        // The temp files of corrupt copies whose writer died (a copy's name is never written
        // again, so only the data file's writers can sweep them).
        let copyLeftovers = [".settings.json.corrupt-20260101T000000.000Z.tmp-ABCDEFGH",
                             ".settings.json.corrupt-20260101T000000.000Z-x7Qa.tmp-12345678"]
        for name in copyLeftovers {
          writeFile(directory.file(name), "invalid bytes being kept")
          backdate(directory.file(name), by: 60)
        }
        for name in lookAlikes + [".settings.json.tmp-LockHeld", ".settings.json.tmp-Symlink1"] {
          backdate(directory.file(name), by: 60)
        }

        let next = try ChildProcess.run(testHelper(), ["update-once", path])
        #expect(next.succeeded, "\(next.standardOutput) \(next.standardError)")

        let remaining = Set(try directory.names())
        for name in leftovers + copyLeftovers { #expect(!remaining.contains(name), "old leftover \(name) was not removed") }
        let kept = [youngName, ".settings.json.tmp-LockHeld", ".settings.json.tmp-Symlink1"] + lookAlikes
        for name in kept { #expect(remaining.contains(name), "\(name) was removed") }
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "victim")
        #expect(try linkStatusOf(directory.file(".settings.json.tmp-Symlink1")).st_mode & S_IFMT == S_IFLNK)
        #expect(watcher.nextLine(startingWith: "wake")?.contains(#""counter": 1"#) == true)
        _ = watcher.finish()
      }
    }
  }
}

/// The JSON of the file at `path`, or `nil` when there is none.
func fileJSONIfPresent(_ path: String) throws -> JSONValue? {
  guard let data = FileManager.default.contents(atPath: path) else { return nil }
  return try JSONValue(parsing: [UInt8](data))
}
