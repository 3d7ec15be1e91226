import Foundation
import Synchronization
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

/// Everything one `CodableStorage` told its observers and error handlers, collected from
/// whichever thread told it, for live-reload tests to wait on and inspect.
///
/// `Sendable`: the collections are behind `Protected`es; the observation is immutable.
final class ReloadProbe<Value: Codable & Sendable>: Sendable {
  private final class Log: Sendable {
    let changes = Protected<[StorageChange<Value>]>([])
    let errors = Protected<[StorageError]>([])
  }
  private let log = Log()
  private let observation: StorageObservation

  init(_ storage: CodableStorage<Value>) {
    let log = self.log
    observation = storage.observe { change in log.changes.withLock { $0.append(change) } }
    storage.onError { error in log.errors.withLock { $0.append(error) } }
  }

  deinit { observation.cancel() }

  /// Every change heard so far, in the order heard.
  var changes: [StorageChange<Value>] { log.changes.withLock { $0 } }
  /// The values of the changes that came from another process.
  var externalValues: [Value] { changes.filter { $0.origin == .external }.map(\.value) }
  /// Every error reported so far.
  var errors: [StorageError] { log.errors.withLock { $0 } }
}

/// Standard live-reload options for the test process's storages: watching on, no exit hooks
/// (the test process is shared), no stderr noise.
let watchingOptions = StorageOptions(flushesAtExit: false, logger: .silent)

/// The built test helper.
func testHelper() throws -> String {
  try ChildProcess.builtExecutable("CCSyncTestHelper")
}

/// Starts the helper's `session FILE MODE` and waits for its `ready` line.
func startSession(_ path: String, mode: String = "immediate") throws -> InteractiveChild {
  let child = try InteractiveChild(try testHelper(), ["session", path, mode])
  guard child.nextLine(startingWith: "ready") != nil else {
    throw ChildProcessError.notFound("session did not start: \(child.standardError)")
  }
  return child
}

/// The identity of the file at `path` now (following links), or `nil`.
func identity(of path: String) -> FileIdentity? {
  (try? fileIdentity(atPath: path)) ?? nil
}

/// `waitUntil` for async tests: suspends between checks instead of blocking a thread of the
/// cooperative pool (which the code under test may need to make progress).
@discardableResult
func waitUntilAsync(deadline: Duration = .seconds(10), _ condition: () -> Bool) async -> Bool {
  let end = ContinuousClock.now + deadline
  while true {
    if condition() { return true }
    if ContinuousClock.now >= end { return false }
    try? await Task.sleep(for: .milliseconds(5))
  }
}
