
/// Something with pending changes to write before the process ends.
protocol ExitFlushable: AnyObject, Sendable {
  /// Writes pending changes; reports (does not throw) failures.
  func flushForExit()
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

  /// Adds `object` to what is flushed at exit, installing the hooks on first use.
  static func register(_ object: any ExitFlushable, logger: StorageLogger) {
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

  /// Flushes every registered storage that is still alive.
  static func flushAll() {
    let live = entries.withLock { $0.compactMap(\.object) }
    for object in live { object.flushForExit() }
  }
}
