import CCSyncSystem

/// One file being watched by a `FileWatcher`. Keeping it keeps the watch (and its watcher);
/// cancelling or releasing it stops the watch.
///
/// `Sendable`: its fields never change; the registration it names lives under the
/// watcher's lock.
public final class FileWatch: Sendable {
  /// The watcher this watch belongs to; held so the watcher lives as long as its watches.
  public let watcher: FileWatcher
  /// The watched path, made absolute (symbolic links not resolved).
  public let path: String
  let id: RegistrationID

  init(watcher: FileWatcher, id: RegistrationID, path: String) {
    self.watcher = watcher
    self.id = id
    self.path = path
  }

  deinit { cancel() }

  /// Stops the watch and releases its directory watches. Calling it again, or from the
  /// handler, is fine. It does not wait for the watcher's thread: a call of the handler that
  /// the thread had already decided on when this was called may still run, and may even
  /// begin just after this returns; none is decided on after. So a handler must not use what
  /// its owner frees right after `cancel()`: capture it (strongly, or weakly and check), as
  /// `CodableStorage` does with `[weak self]`.
  public func cancel() {
    watcher.core.unregister(id)
  }

  /// Wakes the handler once with `.requested` after `delay`, even if nothing happened:
  /// a subscriber that read an empty or invalid file right after an event uses it to read
  /// again after a grace period (another program may be writing in place).
  /// Does nothing after `cancel()`.
  public func recheck(after delay: Duration) {
    watcher.core.recheck(id, after: delay)
  }
}
