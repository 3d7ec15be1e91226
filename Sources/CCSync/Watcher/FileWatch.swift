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

  /// Stops the watch and releases its directory watches. No handler call starts after this
  /// returns; one already running on the watcher's thread finishes. Calling it again, or
  /// from the handler, is fine.
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
