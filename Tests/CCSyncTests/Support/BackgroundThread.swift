import Foundation

/// Runs a closure on a thread of its own, for tests of code that blocks (a lock wait, a read
/// that must not hang): the test waits for the result with a deadline instead of hanging.
///
/// `@unchecked Sendable`: `outcome` is guarded by `condition`.
final class BackgroundThread<Value: Sendable>: @unchecked Sendable {
  private let condition = NSCondition()
  private var outcome: Result<Value, any Error>?

  /// Starts `body` at once on a new thread.
  init(_ body: @escaping @Sendable () throws -> Value) {
    let thread = Thread { [self] in
      let result = Result { try body() }
      condition.lock()
      outcome = result
      condition.broadcast()
      condition.unlock()
    }
    thread.start()
  }

  /// Whether `body` has returned or thrown.
  var isFinished: Bool {
    condition.lock()
    defer { condition.unlock() }
    return outcome != nil
  }

  /// Waits for `body` to finish; `nil` when `deadline` passed first (the thread keeps running).
  func result(deadline: Duration = .seconds(10)) -> Result<Value, any Error>? {
    let (seconds, attoseconds) = deadline.components
    let limit = Date(timeIntervalSinceNow: Double(seconds) + Double(attoseconds) / 1e18)
    condition.lock()
    defer { condition.unlock() }
    while outcome == nil {
      if !condition.wait(until: limit) { break }
    }
    return outcome
  }

  /// The value `body` returned, rethrowing what it threw; throws ``BackgroundThreadError/timedOut``
  /// when `deadline` passed first.
  func value(deadline: Duration = .seconds(10)) throws -> Value {
    guard let result = result(deadline: deadline) else { throw BackgroundThreadError.timedOut }
    return try result.get()
  }
}

enum BackgroundThreadError: Error {
  case timedOut
}
