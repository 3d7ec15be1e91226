import CCSyncJSON
import CCSyncSystem

/// Something with pending changes to write before the process ends.
protocol ExitFlushable: AnyObject, Sendable {
  /// Writes pending changes, waiting for the lock as long as it takes; reports (does not
  /// throw) failures.
  func flushForExit()
  /// Writes pending changes, taking the lock within `wait`; `false` when it was not free in
  /// time (nothing written or reported), `true` otherwise.
  func flushForExit(wait: ContentionWait) -> Bool
}

/// Writes every live storage's pending changes at normal process exit (`atexit`) and when
/// SIGTERM, SIGINT or SIGHUP arrives (then the signal takes its default effect).
///
/// Storages register themselves (weakly) unless their options opt out.
enum ExitFlusher {
  private final class WeakEntry: Sendable {
    weak let object: (any ExitFlushable)?
    init(_ object: any ExitFlushable) { self.object = object }
  }

  private static let entries = Protected<[WeakEntry]>([])
  private static let hooksInstalled = Protected(false)
  /// The threads (``ThreadIdentity/current``) running a storage's last flush in its deinit: the storage
  /// is no longer reachable through `entries` (its weak references are already nil), so an
  /// exit waits for those flushes instead.
  private static let deinitFlushes = ConditionLock()
  nonisolated(unsafe) private static var deinitFlushThreads: [UInt] = []

  /// Adds `object` to what is flushed at exit, installing the hooks on first use.
  static func register(_ object: any ExitFlushable, logger: DiagnosticLog) {
    entries.withLock { entries in
      entries.removeAll { $0.object == nil }
      entries.append(WeakEntry(object))
    }
    let firstTime = hooksInstalled.withLock { installed in
      defer { installed = true }
      return !installed
    }
    guard firstTime else { return }
    ProcessExit.runAtExit { ExitFlusher.flushAll() }
    do {
      try SignalForwarder.install(signals: SignalForwarder.terminationSignals) { _ in ExitFlusher.flushAll() }
    } catch {
      logger.log(.warning, "cannot flush on signals: \(error)")
    }
  }

  /// Flushes every registered storage that is still alive, then waits for the last flushes
  /// of storages being deinitialised on other threads (see ``flushingInDeinit(_:)``).
  /// Storages whose lock is free are written first; those whose lock another process holds
  /// are waited for after, so that one locked file does not hold up the others (and a second
  /// signal that ends the wait loses only what still waits).
  static func flushAll() {
    let live = entries.withLock { $0.compactMap(\.object) }
    let waiting = live.filter { !$0.flushForExit(wait: .nonBlocking) }
    for object in waiting { object.flushForExit() }
    let thread = ThreadIdentity.current
    deinitFlushes.withLock {
      while deinitFlushThreads.contains(where: { $0 != thread }) { deinitFlushes.wait() }
    }
  }

  /// Runs `flush`, a storage's last flush from its deinit, so that an exit meanwhile waits
  /// for it: without this, a storage released on one thread while another thread calls
  /// `exit` (or a signal arrives) lost its pending edit.
  static func flushingInDeinit(_ flush: () -> Void) {
    let thread = ThreadIdentity.current
    deinitFlushes.withLock { deinitFlushThreads.append(thread) }
    defer {
      deinitFlushes.withLock {
        if let index = deinitFlushThreads.firstIndex(of: thread) { deinitFlushThreads.remove(at: index) }
        deinitFlushes.broadcast()
      }
    }
    flush()
  }
}
