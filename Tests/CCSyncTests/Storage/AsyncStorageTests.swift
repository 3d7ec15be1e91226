import Foundation
import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncSystem

/// The `async` calls (`saveAsync`, `updateAsync`, ...): their waits run on the library's own
/// threads, so the cooperative pool keeps running other tasks, and a cancelled task stops
/// waiting without writing. One test at a time: they time a sleeping task and share the
/// library's pool.
@Suite(.serialized) struct AsyncStorageTests {
  /// While 64 tasks await updates of a file another process keeps locked, a task sleeping
  /// 10 ms twenty times finishes; only then is the lock let go (or after 10 s at the latest),
  /// and every update lands, on at most 4 of the library's threads. The tasks run on two
  /// threads of their own (``ContendedRun/pool``), a 2-core machine's cooperative pool that
  /// other tests cannot block: with the blocking `update` both would wait for the lock and
  /// the sleeper could not finish before the updates.
  @Test func aSleepingTaskKeepsRunningWhile64UpdatesWaitForAHeldLock() async throws {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.file("settings.json")
    writeFile(path, #"{"counter": 0}"#)
    let storage = CodableStorage(defaultValue: SharedSettings(), path: path, updateMode: .manual, options: quietOptions)
    let holder = try FlockHolder(lockFile: path + ".lock", in: directory)
    defer { holder.stop() }
    let holding = try #require(holder.sleepPid)
    let release = OnceAction { kill(holding, SIGKILL) }
    release.run(after: .seconds(10))

    let run = await ContendedRun.measure(updates: 64, whenSlept: release.run) {
      try await storage.updateAsync { $0.counter += 1 }
    }

    #expect(run.failures.isEmpty, "\(run.failures)")
    let firstUpdate = try #require(run.updateEnds.min())
    #expect(run.sleeperEnd < firstUpdate, "the sleeper finished only after an update: the pool was held")
    // How late a sleep wakes is the benchmark's figure (async-wakeup); here, only that it
    // never waits out the lock (held until the sleeper is done, 10 s at most).
    #expect(run.worstWakeUpDelay < .seconds(5), "a 10 ms sleep woke \(run.worstWakeUpDelay) late")
    #expect(try fileJSON(path).objectValue?["counter"] == 64)
    #expect(storage.wrappedValue.counter == 64)
    #expect(BlockingWorkPool.shared.peakBusyThreads <= 4)
  }

  /// 64 updates waiting for one locked file take one of the pool's 4 threads, not all of
  /// them: an update of another file meanwhile lands at once.
  @Test func updatesOfALockedFileLeaveThreadsForOtherFiles() async throws {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let lockedPath = directory.file("locked.json")
    let freePath = directory.file("free.json")
    writeFile(lockedPath, #"{"counter": 0}"#)
    writeFile(freePath, #"{"counter": 0}"#)
    let locked = CodableStorage(defaultValue: SharedSettings(), path: lockedPath, updateMode: .manual, options: quietOptions)
    let free = CodableStorage(defaultValue: SharedSettings(), path: freePath, updateMode: .manual, options: quietOptions)
    let holder = try FlockHolder(lockFile: lockedPath + ".lock", in: directory)
    defer { holder.stop() }

    let waiting = (0..<64).map { _ in Task { try await locked.updateAsync { $0.counter += 1 } } }
    try await Task.sleep(for: .milliseconds(200))  // every one of them queued or waiting
    let started = ContinuousClock.now
    try await free.updateAsync { $0.counter += 1 }
    let took = ContinuousClock.now - started
    // Held up behind the locked file's updates it would wait out the 30 s lock.
    #expect(took < .seconds(10), "the other file's update waited \(took) for a thread")
    #expect(try fileJSON(freePath).objectValue?["counter"] == 1)

    holder.stop()
    for update in waiting { _ = try await update.value }
    #expect(try fileJSON(lockedPath).objectValue?["counter"] == 64)
  }

  /// A task awaiting an update while another process holds the lock is cancelled: it throws
  /// `CancellationError` within a few slices of the wait, and the file is unchanged, also
  /// once the lock is free; the storage wrote nothing and its value is the file's.
  @Test func aCancelledUpdateStopsWaitingAndWritesNothing() async throws {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.file("settings.json")
    let original = #"{"theme": "light", "counter": 1}"#
    writeFile(path, original)
    let storage = CodableStorage(defaultValue: SharedSettings(), path: path, updateMode: .manual, options: quietOptions)
    let holder = try FlockHolder(lockFile: path + ".lock", in: directory)

    let ran = Protected(false)
    let waiting = Task {
      try await storage.updateAsync { value in
        ran.withLock { $0 = true }
        value.theme = "cancelled"
      }
    }
    try await Task.sleep(for: .milliseconds(300))  // well into the wait
    let cancelled = ContinuousClock.now
    waiting.cancel()
    let outcome = await waiting.result
    let delay = ContinuousClock.now - cancelled
    #expect(throws: CancellationError.self) { try outcome.get() }
    // The holder keeps the lock for 30 s: ending well before that is the property; how fast
    // (one 50 ms slice on a quiet machine) is the benchmark's to measure, not a test's.
    #expect(delay < .seconds(10), "the cancellation took \(delay) to be seen")

    holder.stop()
    try await Task.sleep(for: .milliseconds(300))  // time for a write that should not come
    #expect(String(decoding: FileManager.default.contents(atPath: path) ?? Data(), as: UTF8.self) == original)
    #expect(!ran.withLock { $0 }, "the closure ran after the cancellation")
    #expect(storage.wrappedValue.theme == "light" && !storage.hasPendingChanges)
    #expect(storage.lastError == nil, "a cancellation is not an error of the storage")
  }

  /// A cancelled `saveAsync` leaves the change pending and the file as it was; the next save
  /// writes it. Calls queued behind the pool's 4 threads are answered at once when cancelled.
  @Test func aCancelledSaveKeepsTheChangePendingAndQueuedCallsEndAtOnce() async throws {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.file("settings.json")
    writeFile(path, #"{"theme": "light"}"#)
    let storages = (0..<8).map { _ in
      CodableStorage(defaultValue: SharedSettings(), path: path, updateMode: .manual, options: quietOptions)
    }
    for (index, storage) in storages.enumerated() { storage.wrappedValue.theme = "edit \(index)" }
    let holder = try FlockHolder(lockFile: path + ".lock", in: directory)

    let saves = storages.map { storage in Task { try await storage.saveAsync() } }
    try await Task.sleep(for: .milliseconds(300))
    let cancelled = ContinuousClock.now
    for save in saves { save.cancel() }
    for save in saves {
      let outcome = await save.result
      #expect(throws: CancellationError.self) { try outcome.get() }
    }
    let delay = ContinuousClock.now - cancelled
    #expect(delay < .seconds(10), "the cancellations took \(delay); the lock is held for 30 s")
    #expect(storages.allSatisfy { $0.hasPendingChanges })

    holder.stop()
    #expect(try fileJSON(path).objectValue?["theme"] == "light")
    try await storages[3].flushAsync()
    #expect(try fileJSON(path).objectValue?["theme"] == "edit 3")
    #expect(!storages[3].hasPendingChanges)
  }

  /// `loadAsync` takes another writer's version; `SharedDocument.updateAsync` is the exact
  /// read-modify-write, and gives up with `lockUnavailable` when its own wait runs out.
  @Test func loadAndTheDocumentsUpdateWorkAndHonourTheirWait() async throws {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.file("settings.json")
    writeFile(path, #"{"counter": 1}"#)
    let storage = CodableStorage(defaultValue: SharedSettings(), path: path, updateMode: .manual, options: quietOptions)
    let document = SharedDocument(path: path, logger: .silent)
    await withTaskGroup(of: Void.self) { group in
      for _ in 0..<20 {
        group.addTask {
          _ = try? await document.updateAsync { json in
            let counter = json.objectValue?["counter"]?.numberValue?.int64Value ?? 0
            json = try JSONValue(parsing: Array(#"{"counter": \#(counter + 1)}"#.utf8))
          }
        }
      }
    }
    #expect(try fileJSON(path).objectValue?["counter"] == 21)
    try await storage.loadAsync()
    #expect(storage.wrappedValue.counter == 21)

    let holder = try FlockHolder(lockFile: path + ".lock", in: directory)
    defer { holder.stop() }
    let started = ContinuousClock.now
    await #expect(throws: StorageError.self) {
      try await document.updateAsync(wait: .timeout(.milliseconds(200))) { _ in }
    }
    let waited = ContinuousClock.now - started
    // The holder keeps the lock for 30 s: giving up well before that is the property.
    #expect(waited >= .milliseconds(200) && waited < .seconds(20), "waited \(waited)")
  }
}

/// What ``ContendedRun/measure(updates:_:)`` saw.
struct ContendedRun {
  /// When the sleeping task finished its 20 sleeps.
  var sleeperEnd: ContinuousClock.Instant
  /// The longest a 10 ms sleep took beyond 10 ms.
  var worstWakeUpDelay: Duration
  /// When each update that succeeded returned.
  var updateEnds: [ContinuousClock.Instant] = []
  /// Why the others failed.
  var failures: [String] = []

  private enum Event: Sendable {
    case slept(end: ContinuousClock.Instant, worst: Duration)
    case updated(ContinuousClock.Instant)
    case failed(String)
  }

  /// Two threads standing for a 2-core machine's cooperative pool, out of reach of the other
  /// tests, which block the real one.
  static let pool = DedicatedExecutor(name: "TwoCorePool", threads: 2)

  /// Runs `updates` calls of `update` and a task sleeping 10 ms twenty times, all at once, on
  /// ``pool``; the sleeper calls `whenSlept` when it is done (a test then lets the updates
  /// through).
  static func measure(
    updates: Int, whenSlept: @escaping @Sendable () -> Void = {}, _ update: @escaping @Sendable () async throws -> Void
  ) async -> ContendedRun {
    await withTaskGroup(of: Event.self) { group in
      for _ in 0..<updates {
        group.addTask(executorPreference: pool) {
          do {
            try await update()
            return .updated(.now)
          } catch {
            return .failed("\(error)")
          }
        }
      }
      group.addTask(executorPreference: pool) {
        var worst = Duration.zero
        for _ in 0..<20 {
          let start = ContinuousClock.now
          try? await Task.sleep(for: .milliseconds(10))
          worst = max(worst, ContinuousClock.now - start - .milliseconds(10))
        }
        let end = ContinuousClock.now
        whenSlept()
        return .slept(end: end, worst: worst)
      }
      var run = ContendedRun(sleeperEnd: .now, worstWakeUpDelay: .zero)
      for await event in group {
        switch event {
        case .slept(let end, let worst): (run.sleeperEnd, run.worstWakeUpDelay) = (end, worst)
        case .updated(let end): run.updateEnds.append(end)
        case .failed(let reason): run.failures.append(reason)
        }
      }
      return run
    }
  }
}

/// An action run once: by whoever calls ``run()`` first, or by a timer as a safety net.
/// `Sendable`: the flag is a `Protected`.
final class OnceAction: Sendable {
  private let done = Protected(false)
  private let action: @Sendable () -> Void

  init(_ action: @escaping @Sendable () -> Void) {
    self.action = action
  }

  /// Runs the action unless it has run.
  @Sendable func run() {
    guard done.withLock({ done in
      defer { done = true }
      return !done
    }) else { return }
    action()
  }

  /// Runs the action after `delay` on a thread of its own, unless it has run by then.
  func run(after delay: Duration) {
    Thread.detachNewThread { [self] in
      Thread.sleep(forTimeInterval: Double(delay.components.seconds))
      run()
    }
  }
}
