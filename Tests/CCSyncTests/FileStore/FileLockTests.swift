import Foundation
import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

/// docs/ARCHITECTURE.md, "Writing": the `flock(2)` lock on the sidecar `NAME.lock`, inside one process
/// (threads, several SharedFile instances) and across processes that use flock(1) or
/// Python's `fcntl.flock`, which must interoperate with ours.
@Suite struct FileLockTests {
  // MARK: Inside one process

  @Test func exclusiveLockShutsOutAnotherInstance() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("data.json")
      let holder = SharedFile(path: path)
      let other = SharedFile(path: path)

      try holder.withLock {
        let error = #expect(throws: StoreError.self) { try other.withLock(wait: .nonBlocking) {} }
        guard case .lockUnavailable(let lockPath)? = error else {
          Issue.record("expected lockUnavailable, got \(String(describing: error))")
          return
        }
        #expect(lockPath == path + ".lock")
        #expect(throws: StoreError.self) { try other.withLock(exclusive: false, wait: .nonBlocking) {} }
        try expectTimeout(of: other, exclusive: true, after: .milliseconds(100))
        try expectTimeout(of: other, exclusive: false, after: .milliseconds(100))
      }
      // Released: the other instance gets it at once, exclusive and shared.
      try other.withLock(wait: .nonBlocking) {}
      try other.withLock(exclusive: false, wait: .nonBlocking) {}
    }
  }

  @Test func sharedLocksAreHeldTogether() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("data.json")
      let first = SharedFile(path: path)
      let second = SharedFile(path: path)

      // Nested closures with `#expect(throws:)` inside crash Swift 6.3.1's region analysis;
      // record the outcomes and check them outside.
      var flockSharedStatus: Int32 = -1
      var exclusiveRefused = false, secondExclusiveRefused = false
      try first.withLock(exclusive: false) {
        try second.withLock(exclusive: false, wait: .nonBlocking) {
          flockSharedStatus = try flockCommand(["-s", "-n", path + ".lock", "true"]).status
          exclusiveRefused = lockIsUnavailable { try SharedFile(path: path).withLock(wait: .nonBlocking) {} }
        }
        secondExclusiveRefused = lockIsUnavailable { try second.withLock(wait: .nonBlocking) {} }
      }
      #expect(flockSharedStatus == 0)
      #expect(exclusiveRefused)
      #expect(secondExclusiveRefused)
      try second.withLock(wait: .nonBlocking) {}
    }
  }

  /// Thread A holds the lock; thread B waits without a deadline. B must not get it while A
  /// holds it, and must get it (no deadlock) once A lets go.
  @Test func waiterWithoutDeadlineGetsTheLockWhenTheHolderReleases() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("data.json")
      let held = DispatchSemaphore(value: 0)
      let letGo = DispatchSemaphore(value: 0)
      let clock = ContinuousClock()

      let holder = BackgroundThread { () throws -> ContinuousClock.Instant in
        try SharedFile(path: path).withLock {
          held.signal()
          letGo.wait()
          return clock.now
        }
      }
      #expect(held.wait(timeout: .now() + 10) == .success)
      let waiter = BackgroundThread { () throws -> ContinuousClock.Instant in
        try SharedFile(path: path).withLock(wait: .forever) { clock.now }
      }
      let key = try lockKey(path + ".lock")
      #expect(waitUntil { ProcessLockTable.shared.userCount(of: key) == 2 }, "the waiter never queued")
      #expect(!waiter.isFinished, "the waiter got a held lock")

      letGo.signal()
      let released = try holder.value()
      let acquired = try waiter.value(deadline: .seconds(10))
      #expect(acquired > released)
    }
  }

  /// A lock file removed while it is held and waited on (an `rm`, a cleaner ageing it out of
  /// /tmp): the waiter, once the holder lets go, holds the removed file's lock, which guards
  /// nothing, since a newcomer creates and locks a new file at the name. The waiter must take
  /// the lock on the file at the name instead, so that newcomers, in this process and others,
  /// are shut out while it holds.
  @Test func aWaiterOnARemovedLockFileLocksTheFileAtTheName() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("data.json")
      let lockPath = path + ".lock"
      let held = DispatchSemaphore(value: 0)
      let letGo = DispatchSemaphore(value: 0)
      let waiterHolds = DispatchSemaphore(value: 0)
      let waiterLetGo = DispatchSemaphore(value: 0)
      let holder = BackgroundThread { () throws -> Void in
        try SharedFile(path: path).withLock {
          held.signal()
          letGo.wait()
        }
      }
      #expect(held.wait(timeout: .now() + 10) == .success)
      let waiter = BackgroundThread { () throws -> Void in
        try SharedFile(path: path).withLock(wait: .forever) {
          waiterHolds.signal()
          waiterLetGo.wait()
        }
      }
      let key = try lockKey(lockPath)
      #expect(waitUntil { ProcessLockTable.shared.userCount(of: key) == 2 }, "the waiter never queued")

      #expect(unlink(lockPath) == 0)
      letGo.signal()
      try holder.value()
      #expect(waiterHolds.wait(timeout: .now() + 10) == .success)
      #expect(throws: StoreError.self, "a newcomer here got the lock the waiter holds") {
        try SharedFile(path: path).withLock(wait: .nonBlocking) {}
      }
      #expect(try flockCommand(["-n", lockPath, "true"]).status == 1, "a newcomer process got the lock the waiter holds")
      waiterLetGo.signal()
      try waiter.value(deadline: .seconds(10))
      #expect(try flockCommand(["-n", lockPath, "true"]).status == 0)
    }
  }

  /// A failed attempt must not undo the holder's entry in the in-process gate (a throwing
  /// class initialiser runs `deinit`, which must not release what was never taken).
  @Test func failedAttemptLeavesTheHoldersGateAlone() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("data.json")

      try SharedFile(path: path).withLock {
        let key = try lockKey(path + ".lock")
        #expect(ProcessLockTable.shared.userCount(of: key) == 1)
        for exclusive in [true, false] {
          #expect(throws: StoreError.self) { try SharedFile(path: path).withLock(exclusive: exclusive, wait: .nonBlocking) {} }
          #expect(throws: StoreError.self) {
            try SharedFile(path: path).withLock(exclusive: exclusive, wait: .timeout(.milliseconds(20))) {}
          }
        }
        #expect(ProcessLockTable.shared.userCount(of: key) == 1)
      }
      #expect(ProcessLockTable.shared.userCount(of: try lockKey(path + ".lock")) == 0)
    }
  }

  @Test func hugeTimeoutMeansWaitingNotCrashing() throws {
    try withTemporaryDirectory { directory in
      let file = SharedFile(path: directory.file("data.json"))
      try file.withLock(wait: .timeout(.seconds(Int64.max))) {}
      try file.withLock(exclusive: false, wait: .timeout(Duration(secondsComponent: Int64.max, attosecondsComponent: 999_999_999_999_999_999))) {}
      // A negative timeout is as good as nonBlocking.
      var refused = false
      try file.withLock { refused = lockIsUnavailable { try SharedFile(path: file.path).withLock(wait: .timeout(.seconds(-1))) {} } }
      #expect(refused)
    }
  }

  /// Locks are not reentrant: a thread that asks, without a deadline, for a lock it holds
  /// in a way it would wait for itself (exclusive inside anything, shared inside exclusive)
  /// is refused at once with `EDEADLK`, through any instance, and through a document's group
  /// commit, instead of hanging for ever. A shared lock inside a shared one is still granted.
  @Test func aLockThisThreadHoldsIsRefusedInsteadOfWaitingForever() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("data.json")
      writeFile(path, #"{"n": 1}"#)
      let outcomes = BackgroundThread { () throws -> [String] in
        func outcome(_ body: () throws -> Void) -> String {
          do {
            try body()
            return "granted"
          } catch StoreError.system(let error) where error.code == EDEADLK {
            return "EDEADLK"
          } catch StorageError.store(.system(let error)) where error.code == EDEADLK {
            return "EDEADLK"
          } catch {
            return "\(error)"
          }
        }
        let file = SharedFile(path: path)
        let document = SharedDocument(path: path)
        var results: [String] = []
        try file.withLock {
          results.append(outcome { try SharedFile(path: path).withLock {} })
          results.append(outcome { try file.withLock(exclusive: false) {} })
        }
        try file.withLock(exclusive: false) {
          results.append(outcome { try file.withLock {} })
          results.append(outcome { try file.withLock(exclusive: false) {} })
        }
        try document.update { _ in
          results.append(outcome { try document.update { $0 = ["n": 2] } })
          results.append(outcome { try SharedDocument(path: path).update { $0 = ["n": 3] } })
        }
        return results
      }
      let results = try outcomes.value(deadline: .seconds(20))
      #expect(results == ["EDEADLK", "EDEADLK", "EDEADLK", "granted", "EDEADLK", "EDEADLK"])
      #expect(try SharedDocument(path: path).read() == ["n": 1])
    }
  }

  /// The gate prefers writers, but a thread that already holds a shared lock and asks for it
  /// again while another thread waits to write gets it at once: making it wait for the writer,
  /// which waits for its outer hold, would deadlock (or, with a deadline, refuse it), where
  /// flock(2) alone would grant it. A new reader on another thread still waits behind the writer.
  @Test func nestedSharedLockWhileAWriterWaits() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("data.json")
      let file = SharedFile(path: path)
      var nestedRefused = false
      var writer: BackgroundThread<Bool>?
      try file.withLock(exclusive: false) {
        writer = BackgroundThread { () throws -> Bool in try SharedFile(path: path).withLock(wait: .forever) { true } }
        let key = try lockKey(path + ".lock")
        #expect(waitUntil { ProcessLockTable.shared.userCount(of: key) == 2 }, "the writer never queued")
        nestedRefused = lockIsUnavailable {
          try SharedFile(path: path).withLock(exclusive: false, wait: .timeout(.milliseconds(200))) {}
        }
        let otherReader = BackgroundThread { () throws -> Bool in
          lockIsUnavailable { try SharedFile(path: path).withLock(exclusive: false, wait: .timeout(.milliseconds(50))) {} }
        }
        #expect(try otherReader.value(), "a new reader on another thread went ahead of the waiting writer")
      }
      #expect(try writer?.value() == true)
      #expect(!nestedRefused, "a nested shared lock waited for the writer that waits for its outer hold")
    }
  }

  // MARK: The lock file itself

  @Test func lockFileIsNeverTruncatedReplacedOrRemoved() throws {
    try withTemporaryDirectory { directory in
      let file = SharedFile(path: directory.file("data.json"))
      let lockPath = directory.file("data.json.lock")
      try Data("4242\n".utf8).write(to: URL(fileURLWithPath: lockPath))  // as some tools leave a PID
      let before = try statusOf(lockPath)

      for value in 0..<5 {
        _ = try file.withLock { try file.replaceContents(with: Array("\(value)".utf8)) }
        try file.withLock(exclusive: false) { _ = try file.read() }
      }

      #expect(try statusOf(lockPath).st_ino == before.st_ino)
      #expect(try contents(of: lockPath) == Array("4242\n".utf8))
      #expect(try directory.names() == ["data.json", "data.json.lock"])
    }
  }

  @Test func symlinkedLockFileIsNotFollowed() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("data.json")
      try symlink(path + ".lock", to: "elsewhere")

      // O_NOFOLLOW refuses it (ELOOP); the error says what sits at the lock's name.
      let error = #expect(throws: StoreError.self) { try SharedFile(path: path).withLock {} }
      guard case .notRegularFile(let lockPath, .symbolicLink)? = error else {
        Issue.record("expected notRegularFile(symbolicLink), got \(String(describing: error))")
        return
      }
      #expect(lockPath == path + ".lock")
      #expect(!FileManager.default.fileExists(atPath: directory.file("elsewhere")))
    }
  }

  /// A reader in a directory it may not write cannot create the lock file: the error says
  /// so (permission denied), rather than that the lock file does not exist.
  @Test func readerInAReadOnlyDirectory() throws {
    try withTemporaryDirectory { directory in
      #expect(chmod(directory.path, 0o755) == 0)
      let path = directory.file("data.json")
      try Data("{}".utf8).write(to: URL(fileURLWithPath: path))

      let missing = try asUser { Result { try SharedFile(path: path).withLock(exclusive: false) {} } }
      guard case .failure(StoreError.system(let error)) = missing else {
        Issue.record("expected a system error, got \(missing)")
        return
      }
      #expect(error.isPermissionDenied, "\(error)")

      // Once the lock file exists (made by a writer), the reader can take a shared lock.
      try SharedFile(path: path).withLock {}
      let present = try asUser { Result { try SharedFile(path: path).withLock(exclusive: false) { true } } }
      #expect(try present.get())
    }
  }

  // MARK: Across processes: flock(1)

  @Test func lockHeldByFlockCommandShutsUsOutUntilItDies() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("data.json")
      let file = SharedFile(path: path)
      // -F: no fork, so the one process we kill is the one holding the lock.
      let holder = try ChildProcess.start(
        try FaultTools.tool("flock"), ["-F", path + ".lock", "sh", "-c", "echo locked; exec sleep 30"])
      defer { holder.stop() }
      #expect(waitUntil { holder.standardOutput.contains("locked") }, "flock(1) never took the lock")

      #expect(throws: StoreError.self) { try file.withLock(wait: .nonBlocking) {} }
      #expect(throws: StoreError.self) { try file.withLock(exclusive: false, wait: .nonBlocking) {} }
      try expectTimeout(of: file, exclusive: true, after: .milliseconds(100))

      let waiter = BackgroundThread { () throws -> Bool in try file.withLock(wait: .forever) { true } }
      #expect(!waitUntil(deadline: .milliseconds(200)) { waiter.isFinished })
      holder.stop()
      #expect(try waiter.value(deadline: .seconds(10)))
      try file.withLock(wait: .nonBlocking) {}
    }
  }

  @Test func ourLocksAreSeenByFlockCommand() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("data.json")
      let lockPath = path + ".lock"
      let file = SharedFile(path: path)

      try file.withLock { () throws in
        #expect(try flockCommand(["-n", lockPath, "true"]).status == 1)
        #expect(try flockCommand(["-s", "-n", lockPath, "true"]).status == 1)
      }
      try file.withLock(exclusive: false) { () throws in
        #expect(try flockCommand(["-s", "-n", lockPath, "true"]).status == 0)
        #expect(try flockCommand(["-n", lockPath, "true"]).status == 1)
      }
      #expect(try flockCommand(["-n", lockPath, "true"]).status == 0)
    }
  }

  // MARK: Across processes: exact read-modify-write

  /// Four Python processes using `fcntl.flock` on `NAME.lock` and four threads here using
  /// `SharedFile.withLock`, each doing locked read-increment-replace on one counter file:
  /// not one increment may be lost.
  @Test func lockedIncrementsFromPythonAndThreadsAreExact() throws {
    guard ChildProcess.find("python3") != nil else { try Test.cancel("python3 is not installed") }
    try withTemporaryDirectory { directory in
      let path = directory.file("counter")
      let go = directory.file("go")
      try SharedFile(path: path).replaceContents(with: Array("0".utf8))
      let script = """
        import fcntl, os, sys, time
        path, go, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
        lock = os.open(path + '.lock', os.O_RDONLY | os.O_CREAT, 0o666)
        directory, name = os.path.split(path)
        temporary = os.path.join(directory, '.%s.py-%d' % (name, os.getpid()))
        while not os.path.exists(go):
            time.sleep(0.001)
        for _ in range(count):
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                with open(path, 'rb') as f:
                    value = int(f.read())
                with open(temporary, 'wb') as f:
                    f.write(b'%d' % (value + 1))
                os.replace(temporary, path)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
        """
      let processes = 4, perProcess = 100, threads = 4, perThread = 25
      let children = try (0..<processes).map { _ in
        try ChildProcess.start("python3", ["-c", script, path, go, String(perProcess)])
      }
      defer { for child in children { child.stop() } }
      let workers = (0..<threads).map { _ in
        BackgroundThread { () throws -> Void in
          // No #expect here: issues are recorded against the test only from its own task.
          let file = SharedFile(path: path)
          guard waitUntil(deadline: .seconds(60), { FileManager.default.fileExists(atPath: go) }) else {
            throw CounterError(text: "no go")
          }
          for _ in 0..<perThread {
            _ = try file.withLock {
              let text = String(decoding: try file.read()?.bytes ?? [], as: UTF8.self)
              guard let value = Int(text) else { throw CounterError(text: text) }
              return try file.replaceContents(with: Array(String(value + 1).utf8))
            }
          }
        }
      }
      #expect(FileManager.default.createFile(atPath: go, contents: nil))

      for worker in workers { try worker.value(deadline: .seconds(120)) }
      for child in children {
        let outcome = child.wait(deadline: .seconds(120))
        #expect(outcome.succeeded, "python child: \(outcome)")
      }
      #expect(try contents(of: path) == Array(String(processes * perProcess + threads * perThread).utf8))
      #expect(try directory.names() == ["counter", "counter.lock", "go"])
    }
  }
}

// MARK: - Helpers

/// The counter file held something that is not a number.
private struct CounterError: Error, CustomStringConvertible {
  var text: String
  var description: String { "counter holds '\(text)'" }
}

/// Expects `file.withLock` with a `.timeout(duration)` wait to fail with `lockUnavailable`,
/// and not before `duration` has passed (nor much later).
private func expectTimeout(
  of file: SharedFile, exclusive: Bool, after duration: Duration, sourceLocation: SourceLocation = #_sourceLocation
) throws {
  let clock = ContinuousClock()
  let start = clock.now
  let error = #expect(throws: StoreError.self, sourceLocation: sourceLocation) {
    try file.withLock(exclusive: exclusive, wait: .timeout(duration)) {}
  }
  let elapsed = clock.now - start
  guard case .lockUnavailable? = error else {
    Issue.record("expected lockUnavailable, got \(String(describing: error))", sourceLocation: sourceLocation)
    return
  }
  #expect(elapsed >= duration, "gave up after \(elapsed)", sourceLocation: sourceLocation)
  #expect(elapsed < duration + .seconds(2), "gave up only after \(elapsed)", sourceLocation: sourceLocation)
}

/// Whether `body` throws ``StoreError/lockUnavailable(path:)``.
func lockIsUnavailable(_ body: () throws -> Void) -> Bool {
  do {
    try body()
    return false
  } catch StoreError.lockUnavailable {
    return true
  } catch {
    return false
  }
}

/// The in-process gate key of a lock file: its device and inode.
private func lockKey(_ lockPath: String) throws -> ProcessLockTable.Key {
  let status = try statusOf(lockPath)
  return ProcessLockTable.Key(device: UInt64(status.st_dev), inode: UInt64(status.st_ino))
}

/// Runs flock(1) with `arguments` to completion.
private func flockCommand(_ arguments: [String]) throws -> ChildProcess.Outcome {
  try ChildProcess.run(try FaultTools.tool("flock"), arguments, deadline: .seconds(30))
}
