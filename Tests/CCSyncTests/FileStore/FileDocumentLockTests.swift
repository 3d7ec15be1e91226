import Foundation
import Testing
@testable import CCSync
import CCSyncSystem

/// The library's file lock as public API (``SharedFile/lock(exclusive:wait:)``,
/// ``SharedFile/lockAsync(exclusive:wait:)``), between real processes: the test helper's
/// `lock-holder`, `ccsync lock` and flock(1) all take the same `NAME.lock`. One test at a
/// time: the async ones share the library's pool and time a sleeping task.
@Suite(.serialized) struct FileDocumentLockTests {
  /// Starts a `lock-holder` helper process and waits for its `ready`.
  private func lockHolder() throws -> InteractiveChild {
    let child = try InteractiveChild(testHelper(), ["lock-holder"])
    #expect(child.nextLine(startingWith: "ready") != nil, "the helper did not start: \(child.standardError)")
    return child
  }

  @Test func anExclusiveHolderKeepsOtherProcessesOutUntilItReleases() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("data.json")
      let first = try lockHolder(), second = try lockHolder()
      #expect(first.request("file \(path) exclusive forever", reply: "held") != nil)

      #expect(second.request("file \(path) exclusive nonblock", reply: "") == "unavailable \(path).lock")
      #expect(second.request("file \(path) shared nonblock", reply: "") == "unavailable \(path).lock")
      // A wait bound runs out: the other process still holds it.
      #expect(second.request("file \(path) shared 0.3", reply: "") == "unavailable \(path).lock")
      // The same lock file as `ccsync lock` and flock(1): both are refused too.
      #expect(try CLI.run(["lock", "-n", path, "--", "true"]).status == 1)
      #expect(try ChildProcess.run(try FaultTools.tool("flock"), ["-n", path + ".lock", "true"]).status == 1)
      #expect(lockIsUnavailable { _ = try SharedFile(path: path).lock(wait: .nonBlocking) })

      // A waiter without a bound gets it once the holder releases.
      second.send("file \(path) exclusive forever")
      #expect(second.keepsRunning(for: .milliseconds(300)) && !second.hasLine(startingWith: "held"))
      #expect(first.request("release", reply: "released") != nil)
      #expect(second.nextLine(startingWith: "held") != nil, "the waiter never got the lock: \(second.standardError)")
      #expect(first.request("file \(path) exclusive nonblock", reply: "") == "unavailable \(path).lock")
      #expect(second.request("release", reply: "released") != nil)
      #expect(first.request("file \(path) exclusive nonblock", reply: "") == "held")
    }
  }

  @Test func sharedHoldersShareAndKeepTheExclusiveOut() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("data.json")
      let first = try lockHolder(), second = try lockHolder()
      #expect(first.request("file \(path) shared forever", reply: "held") != nil)
      #expect(second.request("file \(path) shared nonblock", reply: "") == "held")
      // This process shares it too, and cannot have it exclusively.
      let shared = try SharedFile(path: path).lock(exclusive: false, wait: .nonBlocking)
      #expect(!shared.isExclusive && shared.lockPath == path + ".lock")
      shared.release()
      #expect(lockIsUnavailable { _ = try SharedFile(path: path).lock(exclusive: true, wait: .timeout(.milliseconds(200))) })
      #expect(try CLI.run(["lock", "-n", path, "--", "true"]).status == 1)
      #expect(try CLI.run(["lock", "-s", "-n", path, "--", "true"]).status == 0)

      #expect(first.request("release", reply: "released") != nil)
      #expect(lockIsUnavailable { _ = try SharedFile(path: path).lock(wait: .nonBlocking) }, "the second still holds it")
      #expect(second.request("release", reply: "released") != nil)
      let exclusive = try SharedFile(path: path).lock(wait: .nonBlocking)
      #expect(exclusive.isHeld && exclusive.isExclusive)
      exclusive.release()
      #expect(!exclusive.isHeld)
    }
  }

  /// A lock taken on one thread is released on another (a handle, not a scope).
  @Test func aLockMayBeReleasedOnAnotherThread() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("data.json")
      let lock = try SharedFile(path: path).lock()
      let releaser = BackgroundThread { lock.release() }
      try releaser.value()
      let again = try SharedFile(path: path).lock(wait: .nonBlocking)
      again.release()
    }
  }

  /// A task awaiting the lock another process holds is cancelled: it throws
  /// `CancellationError`, and once the holder is gone it does not hold the lock: this
  /// process and another can take it at once.
  @Test func aCancelledAsyncWaitThrowsAndNeverHoldsTheLock() async throws {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.file("data.json")
    let holder = try FlockHolder(lockFile: path + ".lock", in: directory)
    defer { holder.stop() }

    let waiter = Task { try await SharedFile(path: path).lockAsync() }
    // It waits: the lock is held for 30 s.
    #expect(await !finishes(waiter, within: .milliseconds(300)))
    waiter.cancel()
    let outcome = await waiter.result
    #expect(throws: CancellationError.self) { try outcome.get() }

    holder.stop()
    let other = try lockHolder()
    #expect(other.request("file \(path) exclusive nonblock", reply: "") == "held", "the cancelled waiter holds the lock")
    #expect(other.request("release", reply: "released") != nil)
    let mine = try await SharedFile(path: path).lockAsync(wait: .nonBlocking)
    mine.release()
  }

  /// A wait bound runs out the same way for an `async` take. The holder keeps the lock until
  /// the test ends: a take that reaches one of the library's threads only after its bound
  /// (all four busy with other suites' calls) makes one try, and must find the lock held.
  @Test func anAsyncWaitBoundRunsOut() async throws {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.file("data.json")
    let holder = try FlockHolder(lockFile: path + ".lock", in: directory, seconds: "600")
    defer { holder.stop() }
    await #expect(throws: StoreError.lockUnavailable(path: path + ".lock")) {
      _ = try await SharedFile(path: path).lockAsync(exclusive: false, wait: .timeout(.milliseconds(200)))
    }
    await #expect(throws: StoreError.lockUnavailable(path: path + ".lock")) {
      _ = try await SharedFile(path: path).lockAsync(wait: .nonBlocking)
    }
  }

  /// While 64 tasks await the lock another process holds, a task sleeping 10 ms twenty times
  /// finishes first (the waits hold the library's threads, not the cooperative pool's); then
  /// the holder lets go and every task gets the lock in turn, on at most 4 library threads.
  @Test func aSleepingTaskKeepsRunningWhile64TasksAwaitTheLock() async throws {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.file("data.json")
    let holder = try FlockHolder(lockFile: path + ".lock", in: directory)
    defer { holder.stop() }
    let holding = try #require(holder.sleepPid)
    let release = OnceAction { kill(holding, SIGKILL) }
    release.run(after: .seconds(10))
    let inside = Protected(0)
    let overlaps = Protected(0)

    let run = await ContendedRun.measure(updates: 64, whenSlept: release.run) {
      let lock = try await SharedFile(path: path).lockAsync()
      if inside.withLock({ inside in
        inside += 1
        return inside
      }) > 1 { overlaps.withLock { $0 += 1 } }
      try? await Task.sleep(for: .milliseconds(1))
      inside.withLock { $0 -= 1 }
      lock.release()
    }

    #expect(run.failures.isEmpty, "\(run.failures)")
    #expect(run.updateEnds.count == 64)
    let firstLock = try #require(run.updateEnds.min())
    #expect(run.sleeperEnd < firstLock, "the sleeper finished only after a task got the lock: the pool was held")
    #expect(overlaps.withLock { $0 } == 0, "two tasks held the exclusive lock at once")
    #expect(BlockingWorkPool.shared.peakBusyThreads <= 4)
  }
}

/// Whether `task` ends within `duration` (it is not cancelled either way).
private func finishes<Success: Sendable>(_ task: Task<Success, any Error>, within duration: Duration) async -> Bool {
  let deadline = ContinuousClock.now + duration
  let ended = Protected(false)
  let watcher = Task {
    _ = await task.result
    ended.withLock { $0 = true }
  }
  while ContinuousClock.now < deadline {
    if ended.withLock({ $0 }) { return true }
    try? await Task.sleep(for: .milliseconds(10))
  }
  watcher.cancel()
  return ended.withLock { $0 }
}
