import Foundation
import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

extension FileWatcherTests {
  /// Symbolic links on the watched path: the Kubernetes ConfigMap layout, a link retargeted
  /// to another directory; the sharing of directory watches; cancelling and timers.
  /// Nested so the parent's `.serialized` covers it: the idle tests count this process's threads.
  @Suite struct Symlinks {
    /// Swaps the ConfigMap `..data` link to a new timestamped directory holding `content`,
    /// as the kubelet does: new directory, new link beside the old, rename over, old removed.
    func swapConfigMap(_ scenario: WatchScenario, from old: String, to new: String, content: String) throws {
      try scenario.sh("""
        cd cfg && mkdir \(new) && echo \(content) > \(new)/app.json && ln -s \(new) ..data_tmp \
        && mv -T ..data_tmp ..data && rm -rf \(old)
        """)
    }

    @Test func configMapSwapTwice() throws {
      let scenario = try WatchScenario()
      try scenario.sh("""
        mkdir -p cfg/..2026_11_29_a && echo one > cfg/..2026_11_29_a/app.json
        ln -s ..2026_11_29_a cfg/..data && ln -s ..data/app.json cfg/app.json
        """)
      let log = scenario.watch("cfg/app.json")
      #expect(scenario.watcher.watchedDirectoryCount == 2)  // cfg and the timestamped directory.

      try swapConfigMap(scenario, from: "..2026_11_29_a", to: "..2026_11_29_b", content: "two")
      #expect(log.waitForContent("two\n"))
      #expect(log.reasons.contains(.rearmed))
      try scenario.expectAlive(log)  // Writes through the links, in place, in ..2026_11_29_b.

      let before = log.count
      try swapConfigMap(scenario, from: "..2026_11_29_b", to: "..2026_11_29_c", content: "three")
      #expect(log.waitForContent("three\n", after: before))
      try scenario.expectAlive(log)
      // The old timestamped directories' watches were dropped, not leaked.
      #expect(waitUntil(deadline: .seconds(5)) { scenario.watcher.watchedDirectoryCount == 2 })
    }

    @Test func symlinkRetargetedToAnotherDirectory() throws {
      let scenario = try WatchScenario()
      try scenario.sh("""
        mkdir a b cfg && echo one > a/app.json && echo two > b/app.json
        ln -s ../a/app.json cfg/app.json
        """)
      let log = scenario.watch("cfg/app.json")
      try scenario.sh("ln -s ../b/app.json cfg/.app.json.new && mv -T cfg/.app.json.new cfg/app.json")
      #expect(log.waitForContent("two\n"))
      #expect(log.reasons.contains(.rearmed))

      // Writes in the new directory wake the watch...
      let before = log.count
      try scenario.sh("echo three > b/.app.json.tmp && mv b/.app.json.tmp b/app.json")
      #expect(log.waitForContent("three\n", after: before))
      // ...and those in the old one do not.
      let probe = scenario.watch("a/probe")
      try scenario.expectNoWake(log, probe: probe, during: "echo stale > a/app.json; echo stale2 > a/.tmp && mv a/.tmp a/app.json",
                                "the old target's directory still wakes the watch")
      try scenario.expectAlive(log)
    }

    @Test func linkReplacedByRegularFileAndBack() throws {
      let scenario = try WatchScenario()
      try scenario.sh("mkdir a && echo one > a/app.json && ln -s a/app.json app.json")
      let log = scenario.watch("app.json")
      try scenario.sh("rm app.json && echo two > app.json")
      #expect(log.waitForContent("two\n"))
      try scenario.expectAlive(log)
      let before = log.count
      try scenario.sh("echo three > a/app.json; ln -sfn a/app.json app.json")
      #expect(log.waitForContent("three\n", after: before))
      try scenario.expectAlive(log)
    }

    @Test func watchesAreSharedAndOwnRemovalIsNotAVanishing() throws {
      let scenario = try WatchScenario()
      try scenario.sh("echo one > a.json; echo one > b.json")
      let logA = scenario.watch("a.json")
      let logB = scenario.watch("b.json")
      #expect(scenario.watcher.watchedDirectoryCount == 1)
      scenario.watches[0].cancel()
      #expect(scenario.watcher.watchedDirectoryCount == 1)
      try scenario.expectAlive(logB)
      #expect(logA.count == 0)

      // Cancelling the last watch removes the inotify watch; its IN_IGNORED arrives later and
      // must not be taken for the directory vanishing under the next watch of the same directory.
      for round in 0..<20 {
        scenario.watches.removeAll()  // Cancels both.
        #expect(scenario.watcher.watchedDirectoryCount == 0)
        let log = scenario.watch("b.json")
        try scenario.sh("echo round-\(round) > b.json")
        #expect(log.waitForContent("round-\(round)\n"))
      }
    }

    @Test func cancelStopsWakeUps() throws {
      let scenario = try WatchScenario()
      try scenario.sh("echo one > app.json")
      let log = scenario.watch("app.json")
      let probe = scenario.watch("probe")
      scenario.watches[0].cancel()
      try scenario.expectNoWake(log, probe: probe, during: "echo two > app.json", "a cancelled watch woke")
    }

    @Test func handlerMayCancelItsOwnWatch() throws {
      try withTemporaryDirectory { directory in
        let box = WatchBox()
        let threadID: Int32?
        do {
          let watcher = FileWatcher(safetyRecheckInterval: nil)
          box.set(watcher.watch(directory("app.json")) { _ in
            box.cancelAndRelease()  // Releases the last reference to the watcher, on its thread.
          })
          #expect(waitUntil(deadline: .seconds(5)) { watcher.threadID != nil })
          threadID = watcher.threadID
        }
        try shell("echo x > app.json", in: directory.path)
        #expect(waitUntil(deadline: .seconds(5)) { box.released })
        // The watcher's thread ends by itself.
        #expect(waitUntil(deadline: .seconds(5)) { !processThreads().contains { $0.id == threadID } })
      }
    }

    @Test func recheckAfterDelayWakesOnce() throws {
      let scenario = try WatchScenario()
      let log = scenario.watch("app.json")
      let start = ContinuousClock.now
      scenario.watches[0].recheck(after: .milliseconds(100))
      #expect(log.waitForReason { $0 == .requested })
      #expect(ContinuousClock.now - start >= .milliseconds(100))
      scenario.watches[0].recheck(after: .milliseconds(20))
      #expect(waitUntil(deadline: .seconds(5)) { log.reasons.filter { $0 == .requested }.count == 2 })
      try scenario.expectAlive(log)
      #expect(log.reasons.filter { $0 == .requested }.count == 2)
    }

    @Test func safetyRecheckWakesPeriodically() throws {
      let scenario = try WatchScenario(watcher: FileWatcher(safetyRecheckInterval: .milliseconds(50)))
      let log = scenario.watch("app.json")
      #expect(waitUntil(deadline: .seconds(5)) { log.reasons.filter { $0 == .safetyRecheck }.count >= 3 })
    }
  }
}

/// Holds a watch so that its own handler can cancel and release it.
final class WatchBox: @unchecked Sendable {  // `lock` guards `watch` and `released`.
  private let lock = NSLock()
  private var watch: FileWatch?
  private var isReleased = false

  func set(_ watch: FileWatch) { lock.withLock { self.watch = watch } }

  func cancelAndRelease() {
    let watch = lock.withLock { () -> FileWatch? in
      defer { self.watch = nil; isReleased = true }
      return self.watch
    }
    watch?.cancel()
  }

  var released: Bool { lock.withLock { isReleased } }
}
