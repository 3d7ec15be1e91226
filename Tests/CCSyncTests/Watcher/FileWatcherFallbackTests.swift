import Foundation
import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

extension FileWatcherTests {
  /// Queue overflow, polling (asked for, by environment, and as the fallback when inotify
  /// limits are reached) and the cost of the watcher thread.
  @Suite struct Fallbacks {
    /// The directory is replaced while the queue is full: moved aside, or deleted and made
    /// again (ext4 then usually gives the new directory the old one's inode number, so that
    /// only adding the watch again can tell the old watch is gone).
    @Test(arguments: ["mv d d-old && mkdir d", "rm -rf d && mkdir d"])
    func overflowWakesWithOverflowAndRescans(replacement: String) throws {
      try withTemporaryDirectory { directory in
        try shell("mkdir d && echo one > d/app.json", in: directory.path)
        let helper = try InteractiveChild(testHelper(), ["watch", directory("d/app.json"), "--safety-ms", "0"])
        defer {
          kill(helper.process.processIdentifier, SIGCONT)  // a failed step may have left it stopped
          _ = helper.finish()
        }
        #expect(helper.waitForLine { $0 == "ready polling=false" })

        // Stop the child so its queue fills (fs.inotify.max_queued_events is 16384 by default).
        kill(helper.process.processIdentifier, SIGSTOP)
        #expect(waitUntil(deadline: .seconds(5)) { helper.isStopped })
        for index in 0..<7000 {  // create, close-write, delete: 21000 events.
          let path = directory("d/side-\(index)")
          close(open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0o600))
          unlink(path)
        }
        // With the queue full, the events saying the directory was replaced are lost: only
        // the re-validation after the overflow can find the new directory.
        try shell("\(replacement) && echo final > d/app.json", in: directory.path)
        kill(helper.process.processIdentifier, SIGCONT)

        #expect(helper.waitForLine { $0.hasPrefix("wake overflow ") }, "lines: \(helper.receivedLines.suffix(5))")
        #expect(helper.waitForLine { $0.hasPrefix("wake ") && $0.hasSuffix(" final\\n") })
        let before = helper.receivedLines.count
        try shell("echo after > d/app.json", in: directory.path)
        #expect(helper.waitForLine(after: before) { $0.hasSuffix(" after\\n") },
                "not re-armed on the new directory after the overflow: \(helper.receivedLines.suffix(5))")
      }
    }

    /// A directory that loses its read permission while watched keeps its watch (inotify
    /// needs read permission to add a watch, not to keep one): the safety re-check, which adds
    /// every watch again, must not give up a working watch for polling. Run as user 65534,
    /// since root may read anything.
    @Test func aWatchedDirectoryThatLosesReadPermissionKeepsItsWatch() throws {
      try FaultTools.requireRoot("setpriv to another user")
      let setpriv = try FaultTools.tool("setpriv")
      try withTemporaryDirectory { directory in
        try shell("chmod 755 . && mkdir d && echo one > d/app.json && chown -R 65534:65534 d", in: directory.path)
        let helper = try InteractiveChild(
          setpriv, ["--reuid=65534", "--regid=65534", "--clear-groups", try testHelper(), "watch", directory("d/app.json"), "--safety-ms", "50"])
        defer { _ = helper.finish() }
        #expect(helper.waitForLine { $0 == "ready polling=false" }, "\(helper.receivedLines) \(helper.standardError)")
        try shell("chmod 311 d", in: directory.path)
        // Several re-checks go by.
        let before = helper.receivedLines.count
        #expect(helper.waitForLine(after: before) { $0.hasPrefix("wake safetyRecheck") })
        #expect(helper.waitForLine(after: helper.receivedLines.count) { $0.hasPrefix("wake safetyRecheck") })
        let beforeWrite = helper.receivedLines.count
        try shell("echo two > d/.tmp && mv d/.tmp d/app.json", in: directory.path)
        #expect(helper.waitForLine(after: beforeWrite) { $0.hasPrefix("wake directoryEvent") && $0.hasSuffix(" two\\n") },
                "lines: \(helper.receivedLines.suffix(6))")
        #expect(!helper.standardError.contains("polling"), "\(helper.standardError)")
      }
    }

    @Test func environmentVariableForcesPolling() throws {
      try withTemporaryDirectory { directory in
        try shell("echo one > app.json", in: directory.path)
        let helper = try InteractiveChild(testHelper(), ["watch", directory("app.json")], environment: ["CCSYNC_WATCH_MODE": "poll"])
        defer { _ = helper.finish() }
        #expect(helper.waitForLine { $0 == "ready polling=true" })
        try shell("echo two > .app.json.tmp && mv .app.json.tmp app.json", in: directory.path)
        #expect(helper.waitForLine { $0 == "wake poll two\\n" }, "lines: \(helper.receivedLines)")
      }
    }

    @Test func pollingModeNoticesChanges() throws {
      let scenario = try WatchScenario(watcher: FileWatcher(mode: .polling(interval: .milliseconds(20)),
                                                            safetyRecheckInterval: nil))
      let log = scenario.watch("d/app.json")
      #expect(scenario.watcher.usesPolling)
      #expect(scenario.watcher.watchedDirectoryCount == 0)
      try scenario.sh("mkdir d && echo one > d/app.json")
      #expect(log.waitForContent("one\n"))
      try scenario.sh("echo two > d/.tmp && mv d/.tmp d/app.json")
      #expect(log.waitForContent("two\n"))
      try scenario.sh("echo three-longer > d/app.json")
      #expect(log.waitForContent("three-longer\n"))
      #expect(log.reasons.allSatisfy { $0 == .poll })
    }

    @Test func watchLimitFallsBackToPollingWithOneMessage() throws {
      let messages = Lines()
      let watcher = FileWatcher(mode: .automatic, safetyRecheckInterval: nil,
                                faults: WatcherFaults(watchLimit: 1), diagnostics: messages.append,
                                threadName: "ccsync-watch-lim")
      let scenario = try WatchScenario(watcher: watcher)
      try scenario.sh("mkdir a b c && echo one > a/x.json && echo one > b/y.json")
      let logX = scenario.watch("a/x.json")
      #expect(!watcher.usesPolling)
      let logY = scenario.watch("b/y.json")  // A second directory: over the limit.
      #expect(watcher.usesPolling)
      #expect(messages.all.count == 1)
      #expect(messages.all.first?.contains("fs.inotify.max_user_watches") == true, "\(messages.all)")
      #expect(messages.all.first?.contains("falling back to polling every 1 s") == true, "\(messages.all)")
      let logZ = scenario.watch("c/z.json")
      try scenario.sh("echo two > a/.tmp && mv a/.tmp a/x.json; echo two-b > b/y.json; echo new > c/z.json")
      #expect(logX.waitForContent("two\n"))
      #expect(logY.waitForContent("two-b\n"))
      #expect(logZ.waitForContent("new\n"))
      #expect(messages.all.count == 1)
    }

    @Test func instanceLimitFallsBackToPolling() throws {
      let messages = Lines()
      let watcher = FileWatcher(mode: .automatic, safetyRecheckInterval: nil,
                                faults: WatcherFaults(initError: EMFILE), diagnostics: messages.append,
                                threadName: "ccsync-watch-ins")
      let scenario = try WatchScenario(watcher: watcher)
      let log = scenario.watch("app.json")
      #expect(watcher.usesPolling)
      #expect(messages.all == [
        "ccsync: inotify limit fs.inotify.max_user_instances (or the open-file limit) reached (inotify_init1: Too many open files (errno 24)); falling back to polling every 1 s",
      ])
      try scenario.sh("echo one > app.json")
      #expect(log.waitForContent("one\n"))
    }

    @Test func oneThreadForAHundredWatchesAndNoCPUWhenIdle() throws {
      let scenario = try WatchScenario(watcher: FileWatcher())  // Default safety re-check, 5 s.
      try scenario.sh("for i in 0 1 2 3 4 5 6 7 8 9; do mkdir d$i; done")
      let threadsBefore = Set(processThreads().map(\.id))
      for index in 0..<100 { _ = scenario.watch("d\(index % 10)/file-\(index).json") }
      let probe = scenario.watch("probe")
      try scenario.settle(probe: probe)  // The thread has handled every registration by now.
      let threadID = try #require(scenario.watcher.threadID)
      let newThreads = processThreads().filter { !threadsBefore.contains($0.id) }
      // The loop's thread, and the standby started at the first handler call (it waits on a
      // timer the loop arms during its handler calls).
      let watcherThreads = newThreads.filter { $0.name.hasPrefix("ccsync-watch") }.map(\.id)
      #expect(watcherThreads.contains(threadID) && watcherThreads.count <= 2, "\(newThreads.map(\.name))")
      #expect(scenario.watcher.watchedDirectoryCount == 11)

      let start = try #require(threadCPUNanoseconds(threadID))
      usleep(500_000)  // The measurement window, not a synchronisation.
      let idle = try #require(threadCPUNanoseconds(threadID)) - start
      #expect(idle < 2_000_000, "idle watcher thread CPU over 0.5 s with 101 watches: \(idle / 1000) µs")
    }

    @Test func neighbourRewrittenInATightLoop() throws {
      let scenario = try WatchScenario()
      let log = scenario.watch("app.json")
      let probe = scenario.watch("probe")
      try scenario.settle(probe: probe)
      let neighbour = scenario.directory("neighbour.json")
      let deadline = ContinuousClock.now + .seconds(1)
      while ContinuousClock.now < deadline {
        let descriptor = open(neighbour, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        _ = write(descriptor, "{\"n\":1}\n", 8)
        close(descriptor)
      }
      try scenario.settle(probe: probe)
      // The watcher's CPU for this churn is measured by the benchmark (`bench/run --only
      // watcher`, BENCHMARKS.md section 5); here only that the neighbour wakes nothing.
      #expect(log.count == 0)
    }
  }
}

/// Lines collected from any thread.
final class Lines: Sendable {
  private let lines = Protected<[String]>([])
  var all: [String] { lines.withLock { $0 } }
  var append: @Sendable (String) -> Void { { [self] line in lines.withLock { $0.append(line) } } }
}

