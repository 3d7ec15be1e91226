import Foundation
import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

/// CodableStorage across real processes: the test helper's `increment`, `session` and `churn`.
@Suite struct StorageProcessTests {
  @Test func eightProcessesIncrementExactlyWithDurableWrites() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("counter.json")
      let children = try (0..<8).map { _ in try ChildProcess.start(testHelper(), ["increment", path, "200"]) }
      for child in children {
        let outcome = child.wait(deadline: .seconds(240))
        #expect(outcome.succeeded, "\(outcome.standardError)")
      }
      #expect(try fileJSON(path).objectValue?["counter"] == 1600)
    }
  }

  /// Three processes increment while this one, under the same lock, rewrites the file in its
  /// own compact format and changes other settings: the writers' updates, which parse and
  /// print only the values that changed when the text is their own, fall back to the whole
  /// parse after each foreign write, and no update is lost.
  @Test func incrementsStayExactWhileAForeignWriterReformatsTheFile() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("counter.json")
      writeFile(path, #"{"theme": "light", "fontSize": 13, "counter": 0, "tags": []}"#)
      let children = try (0..<3).map { _ in try ChildProcess.start(testHelper(), ["increment", path, "150"]) }
      let file = SharedFile(path: path)
      var foreign = 0
      while children.contains(where: \.isRunning) && foreign < 200 {
        try file.withLockedFile { locked in
          guard let snapshot = try locked.read(), case .object(var object) = try JSONValue(parsing: snapshot.bytes),
            let counter = object["counter"]?.numberValue?.int64Value
          else { throw StorageError.decodingFailed(path: path, message: "no counter") }
          object["counter"] = .number(JSONNumber(counter + 1))
          object["fontSize"] = .number(JSONNumber(Int64(10 + foreign % 7)))
          try locked.replaceContents(with: JSONValue.object(object).formattedBytes(.compact))
        }
        foreign += 1
      }
      for child in children {
        let outcome = child.wait(deadline: .seconds(240))
        #expect(outcome.succeeded, "\(outcome.standardError)")
      }
      #expect(foreign > 0)
      #expect(try fileJSON(path).objectValue?["counter"] == .number(JSONNumber(Int64(450 + foreign))))
    }
  }

  @Test func pendingIdleEditAndAnotherProcessSaveBothSurvive() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      let first = try InteractiveChild(testHelper(), ["session", path, "idle:60"])
      #expect(first.nextLine(startingWith: "ready") != nil)
      first.request("set theme dark")
      #expect(first.request("pending", reply: "pending") == "pending true")

      let second = try InteractiveChild(testHelper(), ["session", path, "manual"])
      #expect(second.nextLine(startingWith: "ready") != nil)
      second.request("set fontSize 21")
      #expect(second.request("save") == "ok")
      #expect(second.finish() == 0)

      #expect(first.request("flush") == "ok")
      #expect(try fileJSON(path).objectValue?["theme"] == "dark")
      #expect(try fileJSON(path).objectValue?["fontSize"] == 21)
      // The first process's own value now holds the other's field as well.
      #expect(first.request("get", reply: "value")?.contains(#""fontSize":21"#) == true)
      #expect(first.finish() == 0)
    }
  }

  @Test func newerSchemaKeysSurviveAnOlderProcessSave() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      writeFile(path, ##"{"theme": "light", "fontSize": 13, "counter": 0, "tags": [], "v2": {"accent": "#ff0000", "ratio": 1.50}}"##)
      let child = try InteractiveChild(testHelper(), ["session", path, "manual"])
      #expect(child.nextLine(startingWith: "ready") != nil)
      child.request("set counter 5")
      #expect(child.request("save") == "ok")
      #expect(child.finish() == 0)
      let json = try fileJSON(path)
      #expect(json.objectValue?["counter"] == 5)
      #expect(json.objectValue?["v2"] == ["accent": "#ff0000", "ratio": 1.5])
      #expect(try String(contentsOfFile: path, encoding: .utf8).contains("1.50"))
    }
  }

  @Test func killedWritersNeverLeaveATornFile() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("churn.json")
      for round in 0..<15 {
        let child = try ChildProcess.start(testHelper(), ["churn", path])
        #expect(waitUntil { child.standardOutput.contains("started") })
        usleep(UInt32(1_000 * (round % 5) * 3))  // kill at a different point of the loop each round
        kill(child.process.processIdentifier, SIGKILL)
        _ = child.wait()
        let bytes = [UInt8](FileManager.default.contents(atPath: path) ?? Data())
        #expect(!bytes.isEmpty, "round \(round): empty file")
        let json = try JSONValue(parsing: bytes)
        #expect(json.objectValue?["round"]?.numberValue != nil, "round \(round): \(json)")
        // The lock is free afterwards: a non-blocking lock succeeds.
        #expect(throws: Never.self) { try SharedFile(path: path).withLock(wait: .nonBlocking) {} }
      }
      // Leftover temp files from killed writers are never the data file; the next writer works.
      try SharedDocument(path: path).update { $0 = ["after": true] }
      #expect(try fileJSON(path) == ["after": true])
    }
  }

  @Test func immediateWritesBeforeTheSetterReturns() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      let child = try InteractiveChild(testHelper(), ["session", path, "immediate"])
      #expect(child.nextLine(startingWith: "ready") != nil)
      child.request("set theme dark")
      #expect(try fileJSON(path).objectValue?["theme"] == "dark")
      child.request("set theme darker")
      #expect(try fileJSON(path).objectValue?["theme"] == "darker")
      #expect(child.finish() == 0)
    }
  }

  @Test func manualWritesOnlyOnSave() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      writeFile(path, #"{"theme": "light"}"#)
      let child = try InteractiveChild(testHelper(), ["session", path, "manual"])
      #expect(child.nextLine(startingWith: "ready") != nil)
      child.request("set theme dark")
      #expect(try fileJSON(path).objectValue?["theme"] == "light", "written before save")
      // Another process's write comes and is reloaded; the manual process writes nothing meanwhile.
      try SharedDocument(path: path).update { try $0.setValue(30, at: JSONPath(tokens: ["fontSize"])) }
      #expect(waitUntil { child.request("get", reply: "value")?.contains(#""fontSize":30"#) == true })
      #expect(try fileJSON(path).objectValue?["theme"] == "light", "the reload wrote the pending edit")
      #expect(child.request("save") == "ok")
      #expect(try fileJSON(path).objectValue?["theme"] == "dark")
      #expect(try fileJSON(path).objectValue?["fontSize"] == 30)
      #expect(child.finish() == 0)
    }
  }

  @Test func afterIdleWritesOnceTheValueStopsChanging() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      writeFile(path, #"{"counter": 0}"#)
      let child = try InteractiveChild(testHelper(), ["session", path, "idle:0.5"])
      #expect(child.nextLine(startingWith: "ready") != nil)
      let start = ContinuousClock.now
      child.request("set counter 1")
      // Changing it every 50 ms keeps it from being idle: nothing is written meanwhile.
      for value in 2...8 {
        usleep(50_000)
        child.request("set counter \(value)")
        if ContinuousClock.now - start < .milliseconds(450) {
          #expect(try fileJSON(path).objectValue?["counter"] == 0)
        }
      }
      #expect(waitUntil { (try? fileJSON(path).objectValue?["counter"]) == 8 })
      // The file is renamed into place before the save returns and clears the pending state.
      #expect(waitUntil { child.request("pending", reply: "pending") == "pending false" })
      #expect(child.finish() == 0)
    }
  }

  @Test func afterIdleMaximumDelaySavesAValueThatNeverStopsChanging() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      writeFile(path, #"{"counter": 0}"#)
      // idle 0.4 s: the maximum delay is 10 s; changing every 0.1 s for up to 15 s must still be saved.
      let child = try InteractiveChild(testHelper(), ["session", path, "idle:0.4"])
      #expect(child.nextLine(startingWith: "ready") != nil)
      var value = 0
      let saved = waitUntil(deadline: .seconds(15)) {
        value += 1
        child.request("set counter \(value)")
        usleep(100_000)
        let counter = (try? fileJSON(path))?.objectValue?["counter"]?.numberValue?.int64Value
        return (counter ?? 0) > 0
      }
      #expect(saved)
      #expect(child.finish() == 0)
    }
  }

  /// The times compared are the file's own (its modification time at each write, taken
  /// from the version read), not when this test noticed the write: under load the test may
  /// notice the first write late, which would shorten the interval it measures.
  @Test func throttledWritesTheFirstChangeAtOnceAndTheLastOneLater() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      writeFile(path, #"{"counter": 0}"#)
      let child = try InteractiveChild(testHelper(), ["session", path, "throttled:1.0"])
      #expect(child.nextLine(startingWith: "ready") != nil)
      child.request("set counter 1")
      var firstWrite: Int64 = 0
      #expect(waitUntil(deadline: .seconds(5)) {
        guard let version = counterVersion(path), version.counter == 1 else { return false }
        firstWrite = version.modified
        return true
      })
      child.request("set counter 2")
      child.request("set counter 3")
      if let version = counterVersion(path), version.modified - firstWrite < 900_000_000 {
        #expect(version.counter == 1, "a second write came \(version.modified - firstWrite) ns after the first")
      }
      var lastWrite: Int64 = 0
      #expect(waitUntil(deadline: .seconds(5)) {
        guard let version = counterVersion(path), version.counter == 3 else { return false }
        lastWrite = version.modified
        return true
      })
      #expect(lastWrite - firstWrite >= 900_000_000, "the second write came \(lastWrite - firstWrite) ns after the first")
      #expect(child.finish() == 0)
    }
  }

  /// The counter in the version of `path` read now, and that version's modification time in
  /// nanoseconds since the epoch (the same open file for both, so they belong together).
  private func counterVersion(_ path: String) -> (counter: JSONValue?, modified: Int64)? {
    let descriptor = open(path, O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else { return nil }
    defer { close(descriptor) }
    var status = stat()
    guard fstat(descriptor, &status) == 0 else { return nil }
    let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: false)
    guard let data = try? handle.readToEnd(), let json = try? JSONValue(parsing: [UInt8](data)) else { return nil }
    return (json.objectValue?["counter"], Int64(status.st_mtim.tv_sec) * 1_000_000_000 + Int64(status.st_mtim.tv_nsec))
  }

  @Test(arguments: [SIGTERM, SIGINT, SIGHUP])
  func pendingChangesAreWrittenOnTerminatingSignals(signal: Int32) throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      let child = try InteractiveChild(testHelper(), ["session", path, "idle:60"])
      #expect(child.nextLine(startingWith: "ready") != nil)
      child.request("set theme signalled")
      #expect(!FileManager.default.fileExists(atPath: path))
      let (status, signaled) = child.terminate(signal: signal)
      #expect(signaled && status == signal)
      #expect(try fileJSON(path).objectValue?["theme"] == "signalled")
    }
  }

  /// The flush a terminating signal starts waits for the lock like any save; when another
  /// process holds it, a second terminating signal ends the process at once (the user's way
  /// out), its pending change unwritten and the file untouched.
  @Test func aSecondSignalEndsAFlushThatWaitsForTheLock() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      writeFile(path, #"{"theme": "light"}"#)
      let child = try InteractiveChild(testHelper(), ["session", path, "idle:60"])
      #expect(child.nextLine(startingWith: "ready") != nil)
      child.request("set theme unwritten")
      let holder = try ChildProcess.start(
        try FaultTools.tool("flock"), ["-F", path + ".lock", "sh", "-c", "echo locked; exec sleep 30"])
      defer { holder.stop() }
      #expect(waitUntil { holder.standardOutput.contains("locked") }, "flock(1) never took the lock")

      let pid = child.process.processIdentifier
      kill(pid, SIGTERM)
      let firstSignal = ContinuousClock.now
      #expect(waitUntil { blockedFlockWaiters().contains(pid) }, "the signal's flush never waited for the lock")
      #expect(child.process.isRunning)
      // A second signal counts once a second has passed (sooner, it is the first one again).
      _ = waitUntil { ContinuousClock.now - firstSignal > .milliseconds(1100) }
      let (status, signaled) = child.terminate(signal: SIGINT)
      #expect(signaled && status == SIGINT)
      #expect(try fileJSON(path).objectValue?["theme"] == "light")
    }
  }

  /// A second terminating signal right after the first is the same event delivered twice
  /// (closing a terminal sends SIGHUP twice; systemd sends SIGTERM and SIGHUP together): it
  /// does not abort the flush, which writes the pending change, and the process ends by the
  /// first signal. It used to be killed at once, the change lost.
  @Test func aSignalRepeatedAtOnceDoesNotAbortTheFlush() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      writeFile(path, #"{"theme": "light"}"#)
      let child = try InteractiveChild(testHelper(), ["session", path, "idle:60"])
      #expect(child.nextLine(startingWith: "ready") != nil)
      child.request("set theme written")
      let holder = try FlockHolder(lockFile: path + ".lock", in: directory)
      let pid = child.process.processIdentifier
      kill(pid, SIGTERM)
      let firstSignal = ContinuousClock.now
      #expect(waitUntil { blockedFlockWaiters().contains(pid) }, "the signal's flush never waited for the lock")
      // The repeat arrives while the flush runs, well within the second that marks a repeat.
      kill(pid, SIGHUP)
      if ContinuousClock.now - firstSignal > .milliseconds(800) {
        holder.stop()
        try Test.cancel("the machine took too long to reach the flush for the repeat to count as one")
      }
      #expect(child.keepsRunning(for: .milliseconds(300)), "a repeated signal ended the flush")
      holder.stop()
      let (status, signaled) = child.waitForEnd()
      #expect(signaled && status == SIGTERM)
      #expect(try fileJSON(path).objectValue?["theme"] == "written")
    }
  }

  /// As the init process of a PID namespace (a container's PID 1), whose signals at their
  /// default action are ignored, a SIGTERM still flushes and then ends the process with
  /// 128+15; it used to flush and run on, its handlers disarmed.
  @Test func asAContainersInitASignalStillEndsTheProcess() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      let (child, initPid) = try startSessionAsInit(path)
      child.request("set theme init")
      kill(initPid, SIGTERM)
      #expect(child.endsOnItsOwn(within: .seconds(10), killingIfNot: initPid), "PID 1 ran on after the signal's flush")
      #expect(child.process.terminationStatus == 128 + SIGTERM)
      #expect(try fileJSON(path).objectValue?["theme"] == "init")
    }
  }

  /// As a PID namespace's init, a second signal (a second or more after the first) still ends
  /// a flush that waits for a lock another process holds, with 128+N.
  @Test func asAContainersInitASecondSignalStillEndsAWaitingFlush() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      writeFile(path, #"{"theme": "light"}"#)
      let holder = try FlockHolder(lockFile: path + ".lock", in: directory)
      defer { holder.stop() }
      let (child, initPid) = try startSessionAsInit(path)
      child.request("set theme unwritten")
      kill(initPid, SIGTERM)
      let firstSignal = ContinuousClock.now
      #expect(waitUntil { blockedFlockWaiters().contains(initPid) }, "the signal's flush never waited for the lock")
      // The capture list works around a crash of Swift 6.3.1's SendNonSendable pass.
      _ = waitUntil { [firstSignal] in ContinuousClock.now - firstSignal > .milliseconds(1100) }
      kill(initPid, SIGINT)
      #expect(child.endsOnItsOwn(within: .seconds(10), killingIfNot: initPid), "the second signal did not end the flush")
      #expect(child.process.terminationStatus == 128 + SIGINT)
      #expect(try fileJSON(path).objectValue?["theme"] == "light")
    }
  }

  /// The exit flush writes first the storages whose lock is free, then waits for the locked
  /// ones: a file another process keeps locked does not hold up the others, which used to
  /// wait behind it in the order they were made, and were lost when a second signal ended
  /// the wait.
  @Test func aLockedFileDoesNotHoldUpTheExitFlushOfOthers() throws {
    try withTemporaryDirectory { directory in
      let (first, second) = (directory.file("first.json"), directory.file("second.json"))
      writeFile(first, #"{"theme": "light"}"#)
      writeFile(second, #"{"theme": "light"}"#)
      let holder = try FlockHolder(lockFile: first + ".lock", in: directory)
      defer { holder.stop() }
      let child = try InteractiveChild(testHelper(), ["pending-pair", first, second])
      #expect(child.nextLine(startingWith: "ready") != nil)
      let pid = child.process.processIdentifier
      kill(pid, SIGTERM)
      #expect(waitUntil { (try? fileJSON(second))?.objectValue?["theme"] == "pending" }, "the free file waited behind the locked one")
      #expect(waitUntil { blockedFlockWaiters().contains(pid) })
      holder.stop()
      let (status, signaled) = child.waitForEnd()
      #expect(signaled && status == SIGTERM)
      #expect(try fileJSON(first).objectValue?["theme"] == "pending")
    }
  }

  /// A storage released on one thread (its deinit flushes the pending change) while another
  /// thread calls `exit`: the exit waits for that flush. Here the flush waits for a lock
  /// another process holds, so without the wait the process ended first and the change was
  /// lost.
  @Test func anExitWaitsForTheFlushOfAStorageBeingReleased() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      writeFile(path, #"{"theme": "light"}"#)
      let holder = try FlockHolder(lockFile: path + ".lock", in: directory)
      let child = try InteractiveChild(testHelper(), ["release-then-exit", path])
      #expect(child.nextLine(startingWith: "ready") != nil)
      let pid = child.process.processIdentifier
      child.request("release")
      #expect(waitUntil { blockedFlockWaiters().contains(pid) }, "the deinit's flush never waited for the lock")
      child.send("exit")
      #expect(child.keepsRunning(for: .milliseconds(300)), "the exit did not wait")
      holder.stop()
      #expect(child.waitForEnd().status == 0)
      #expect(try fileJSON(path).objectValue?["theme"] == "released")
    }
  }

  @Test func pendingChangesAreWrittenAtNormalExit() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      let child = try InteractiveChild(testHelper(), ["session", path, "idle:60"])
      #expect(child.nextLine(startingWith: "ready") != nil)
      child.request("set theme atexit")
      #expect(child.finish() == 0)
      #expect(try fileJSON(path).objectValue?["theme"] == "atexit")
    }
  }
}

/// The test helper's `session FILE idle:60` as the init process (PID 1) of a new PID
/// namespace, started through `unshare` (needs root), with its PID as this process sees it.
func startSessionAsInit(_ path: String) throws -> (InteractiveChild, Int32) {
  try FaultTools.requireRoot("a new PID namespace")
  let unshare = try FaultTools.tool("unshare")
  let child = try InteractiveChild(unshare, ["--pid", "--fork", "--mount-proc", try testHelper(), "session", path, "idle:60"])
  guard child.nextLine(startingWith: "ready") != nil else {
    _ = child.terminate(signal: SIGKILL)
    try Test.cancel("no PID namespace here: \(child.standardError)")
  }
  // The helper is unshare's child, PID 1 in its namespace.
  let unsharePid = child.process.processIdentifier
  let children = try String(contentsOfFile: "/proc/\(unsharePid)/task/\(unsharePid)/children", encoding: .utf8)
  let initPid = try #require(Int32(children.split(separator: " ").first ?? ""))
  return (child, initPid)
}
