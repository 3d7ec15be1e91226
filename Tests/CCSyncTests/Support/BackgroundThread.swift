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

/// Runs `body` on a thread of its own whose file-system permission checks are those of
/// `user`:`group` (65534, nobody, by default), and waits for it. Tests run as root, which
/// ignores permission bits; this is how they see what an ordinary user would.
///
/// `setfsuid(2)` and `setfsgid(2)` change only the calling thread's file-system ids, and
/// moving the file-system user id away from 0 drops that thread's `CAP_DAC_OVERRIDE`,
/// `CAP_CHOWN`, `CAP_FOWNER` and the like, so the rest of the test process stays root.
/// Supplementary groups stay root's (group 0): give test files other groups.
func asUser<Value: Sendable>(
  _ user: UInt32 = 65534, group: UInt32 = 65534, _ body: @escaping @Sendable () throws -> Value
) throws -> Value {
  let thread = BackgroundThread { () throws -> Value in
    _ = setFileSystemGroup(group)
    _ = setFileSystemUser(user)
    defer {
      _ = setFileSystemUser(0)
      _ = setFileSystemGroup(0)
    }
    guard UInt32(bitPattern: setFileSystemUser(UInt32.max)) == user else { throw POSIXError(.EPERM) }  // -1 only queries
    return try body()
  }
  return try thread.value(deadline: .seconds(60))
}

// Glibc's Swift module leaves out <sys/fsuid.h>; both return the previous id.
@_silgen_name("setfsuid") private func setFileSystemUser(_ user: UInt32) -> Int32
@_silgen_name("setfsgid") private func setFileSystemGroup(_ group: UInt32) -> Int32
