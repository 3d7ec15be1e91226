import Foundation
import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

/// Runs `script` with `/bin/sh -c` in `directory`, as a foreign writer would; fails the test
/// when it exits with a non-zero status.
@discardableResult
func shell(_ script: String, in directory: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
  let process = Process()
  process.executableURL = URL(fileURLWithPath: "/bin/sh")
  process.arguments = ["-c", script]
  process.currentDirectoryURL = URL(fileURLWithPath: directory)
  let output = Pipe()
  process.standardOutput = output
  try process.run()
  let data = output.fileHandleForReading.readDataToEndOfFile()
  process.waitUntilExit()
  #expect(process.terminationStatus == 0, "sh -c '\(script)' exited \(process.terminationStatus)",
          sourceLocation: sourceLocation)
  return String(decoding: data, as: UTF8.self)
}


/// The file's content now, or `nil` when it cannot be read.
func contents(_ path: String) -> String? {
  try? String(contentsOfFile: path, encoding: .utf8)
}

/// What a handler saw at each wake-up: the reason, and the file's content at that moment
/// (what a subscriber looking again would read).
final class WakeLog: Sendable {
  struct Entry: Sendable {
    var reason: FileWatchReason
    var content: String?
  }

  private let entries = Protected<[Entry]>([])
  let path: String

  init(path: String) { self.path = path }

  /// The handler to give `FileWatcher.watch`.
  var handler: @Sendable (FileWatchReason) -> Void {
    { [self] reason in
      let content = contents(path)
      entries.withLock { $0.append(Entry(reason: reason, content: content)) }
    }
  }

  var all: [Entry] { entries.withLock { $0 } }
  var count: Int { entries.withLock { $0.count } }
  var reasons: [FileWatchReason] { all.map(\.reason) }

  /// Waits until a wake-up after the first `after` ones saw `content`.
  func waitForContent(_ content: String?, after: Int = 0, timeout: Duration = .seconds(5)) -> Bool {
    waitUntil(deadline: timeout) { all.dropFirst(after).contains { $0.content == content } }
  }

  /// Waits until a wake-up after the first `after` ones had a reason matching `predicate`.
  func waitForReason(after: Int = 0, timeout: Duration = .seconds(5),
                     _ predicate: (FileWatchReason) -> Bool) -> Bool {
    waitUntil(deadline: timeout) { all.dropFirst(after).contains { predicate($0.reason) } }
  }
}

/// One watched file in a temp directory, with the machinery the scenarios share.
final class WatchScenario {
  let directory: TemporaryDirectory
  let watcher: FileWatcher
  var watches: [FileWatch] = []
  var aliveCount = 0

  init(watcher: FileWatcher = FileWatcher(safetyRecheckInterval: nil)) throws {
    directory = try TemporaryDirectory()
    self.watcher = watcher
  }

  deinit {
    for watch in watches { watch.cancel() }
    directory.remove()
  }

  /// Watches `name` (relative to the temp directory); returns its log.
  func watch(_ name: String) -> WakeLog {
    let log = WakeLog(path: directory(name))
    watches.append(watcher.watch(directory(name), handler: log.handler))
    return log
  }

  func sh(_ script: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
    try shell(script, in: directory.path, sourceLocation: sourceLocation)
  }

  /// Makes sure every event caused so far in the directory of `probeName` has been handled
  /// and delivered: writes the probe file and waits for its wake-up. A probe registered
  /// after the watch under test is delivered after it in the same batch, so once the probe
  /// has been woken, any wake-up the earlier events caused has been recorded.
  func settle(probe log: WakeLog, sourceLocation: SourceLocation = #_sourceLocation) throws {
    let before = log.count
    try sh("echo probe-\(before) > '\(log.path)'", sourceLocation: sourceLocation)
    #expect(log.waitForContent("probe-\(before)\n", after: before), "probe never woke",
            sourceLocation: sourceLocation)
  }

  /// Runs `script` and checks that it woke `log` no more: `probe` (a watch registered after
  /// `log`'s) is woken after whatever the script's events caused, see ``settle(probe:)``.
  /// Settles first too, so that a late wake-up from the scenario's previous step (an event
  /// still queued when the test moved on) is not counted against the script.
  func expectNoWake(
    _ log: WakeLog, probe: WakeLog, during script: String, _ comment: String,
    sourceLocation: SourceLocation = #_sourceLocation
  ) throws {
    try settle(probe: probe, sourceLocation: sourceLocation)
    let before = log.count
    try sh(script, sourceLocation: sourceLocation)
    try settle(probe: probe, sourceLocation: sourceLocation)
    #expect(log.count == before, "\(comment): \(log.reasons)", sourceLocation: sourceLocation)
  }

  /// Checks the watch still works after a scenario: a later in-place write wakes it.
  func expectAlive(_ log: WakeLog, sourceLocation: SourceLocation = #_sourceLocation) throws {
    aliveCount += 1
    let before = log.count
    try sh("echo alive-\(aliveCount) > '\(log.path)'", sourceLocation: sourceLocation)
    #expect(log.waitForContent("alive-\(aliveCount)\n", after: before),
            "watch dead after the scenario; saw \(log.all.dropFirst(before).map(\.reason))",
            sourceLocation: sourceLocation)
  }
}

/// The threads of this process: kernel id and name.
func processThreads() -> [(id: Int32, name: String)] {
  let ids = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
  return ids.compactMap { id in
    guard let number = Int32(id) else { return nil }
    let name = contents("/proc/self/task/\(id)/comm")?.trimmingCharacters(in: .whitespacesAndNewlines)
    return (number, name ?? "")
  }
}

/// Nanoseconds thread `id` of this process has spent on a CPU (`schedstat`'s first field).
func threadCPUNanoseconds(_ id: Int32) -> UInt64? {
  guard let text = contents("/proc/self/task/\(id)/schedstat") else { return nil }
  return text.split(separator: " ").first.flatMap { UInt64($0) }
}
