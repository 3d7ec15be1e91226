import Testing
@testable import CCSync
import CCSyncSystem

/// The watcher's leader/follower hand-over (`LoopHandOver`, docs/ARCHITECTURE.md, "Threads"):
/// a handler that blocks has the loop taken over by the standby, other watches go on, the
/// blocked watch's own wake-ups are held for it, never made on a second thread at once.
@Suite struct LoopHandOverTests {
  /// A handler that blocks while its file holds `block`, counting its calls and how many
  /// run at once.
  final class BlockingHandler: Sendable {
    private struct State {
      var calls = 0
      var running = 0
      var mostAtOnce = 0
      var released = false
      var contents: [String?] = []
    }
    private let state = Protected(State())
    private let gate = ConditionLock()
    let path: String

    init(path: String) { self.path = path }

    var handler: @Sendable (FileWatchReason) -> Void {
      { [self] _ in
        let content = contents(path)
        state.withLock {
          $0.calls += 1
          $0.running += 1
          $0.mostAtOnce = max($0.mostAtOnce, $0.running)
          $0.contents.append(content)
        }
        if content == "block\n" {
          gate.withLock { while !state.withLock({ $0.released }) { gate.wait() } }
        }
        state.withLock { $0.running -= 1 }
      }
    }

    var calls: Int { state.withLock { $0.calls } }
    var mostAtOnce: Int { state.withLock { $0.mostAtOnce } }
    var contentsSeen: [String?] { state.withLock { $0.contents } }

    func release() {
      state.withLock { $0.released = true }
      gate.withLock { gate.broadcast() }
    }
  }

  @Test func aBlockedHandlerHandsTheLoopOverAndItsOwnWakeUpsWait() throws {
    let scenario = try WatchScenario()
    let blocking = BlockingHandler(path: scenario.directory("blocking.json"))
    defer { blocking.release() }
    scenario.watches.append(scenario.watcher.watch(blocking.path, handler: blocking.handler))
    let other = scenario.watch("other.json")
    let probe = scenario.watch("probe")
    try scenario.settle(probe: probe)
    let handOver = scenario.watcher.core.handOver
    let takeOversBefore = handOver.takeOverCount

    try scenario.sh("echo block > blocking.json")
    #expect(waitUntil { blocking.contentsSeen.contains("block\n") }, "the handler never ran")
    try scenario.sh("echo moved-on > other.json")
    #expect(other.waitForContent("moved-on\n"), "another watch waited behind the blocked handler")
    #expect(handOver.takeOverCount > takeOversBefore, "no standby took the loop over")

    // The blocked watch's wake-ups meanwhile are held for its own thread, not made on another.
    let callsWhileBlocked = blocking.calls
    try scenario.sh("echo two > blocking.json; echo three > blocking.json")
    try scenario.settle(probe: probe)
    #expect(blocking.calls == callsWhileBlocked, "a blocked watch's handler was called again meanwhile")

    blocking.release()
    #expect(waitUntil { blocking.contentsSeen.last == "three\n" }, "the held wake-up was not made: \(blocking.contentsSeen)")
    #expect(blocking.mostAtOnce == 1, "one watch's handler ran on two threads at once")
    try scenario.expectAlive(other)
    // The replaced leader stands by again, or ends: the leader and one standby are left.
    #expect(waitUntil { handOver.threadCount <= 2 }, "\(handOver.threadCount) watcher threads left")
  }

  @Test func aStoppedWatcherEndsEveryThreadItStarted() throws {
    var threadsLeft: () -> Int = { 0 }
    try withTemporaryDirectory { directory in
      let blocking = BlockingHandler(path: directory("blocking.json"))
      do {
        let watcher = FileWatcher(safetyRecheckInterval: nil)
        let watch = watcher.watch(blocking.path, handler: blocking.handler)
        let handOver = watcher.core.handOver
        threadsLeft = { handOver.threadCount }
        try shell("echo block > blocking.json", in: directory.path)
        #expect(waitUntil { blocking.contentsSeen.contains("block\n") }, "the handler never ran")
        #expect(waitUntil { handOver.takeOverCount == 1 }, "no standby took the loop over")
        blocking.release()
        watch.cancel()
      }
      // `deinit` stopped the watcher and waited for its threads.
      #expect(threadsLeft() == 0, "\(threadsLeft()) threads of a released watcher still run")
    }
  }
}
