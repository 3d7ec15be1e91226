import Glibc

/// Work to run when the process exits normally (`exit()` or returning from `main`).
package enum ProcessExit {
  private static let actions = Protected<[@Sendable () -> Void]>([])
  private static let registered = Protected(false)

  /// Runs `action` at normal exit, after earlier-registered ones. The corresponding C
  /// function is `atexit`.
  package static func runAtExit(_ action: @escaping @Sendable () -> Void) {
    actions.withLock { $0.append(action) }
    let first = registered.withLock { registered in
      defer { registered = true }
      return !registered
    }
    if first {
      atexit {
        for action in ProcessExit.actions.withLock({ $0 }) { action() }
      }
    }
  }
}
