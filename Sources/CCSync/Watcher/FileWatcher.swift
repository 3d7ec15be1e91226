import CCSyncSystem
import Synchronization

/// Tells subscribers when a file may have changed, whoever changed it and however: a
/// rename-replace, an in-place write, an editor's save, a symbolic link retargeted (the
/// Kubernetes ConfigMap `..data` swap), its directory deleted and re-created.
///
/// One inotify instance and one thread serve all the watches of a watcher, whatever their
/// number, with a standby thread that takes the loop over when a handler runs long (see
/// `LoopHandOver`); `FileWatcher.shared` is the one a process normally uses. The thread
/// starts on the first `watch` and sleeps in `poll(2)` until an event, a request or a timer:
/// idle, it uses no CPU apart from the safety re-check. While other files in a watched directory change
/// thousands of times a second, it reads their events in batches a millisecond apart instead
/// of waking for each (see `NoiseGate`); a watched file's change may then be seen up to a
/// millisecond later.
///
/// What is watched is directories, never the file (a watch on the file dies with the first
/// rename-replace): the file's directory, the directory holding each symbolic link on the
/// way to it, and, while a directory is missing, its nearest existing ancestor. Only events
/// naming an entry on the file's resolved path wake a watch; editor side files (`4913`,
/// `NAME~`, `.NAME.swp`, `.#NAME`), temp files and `NAME.lock` do not.
///
/// Where inotify is missing or its limits are reached (`fs.inotify.max_user_instances`,
/// `fs.inotify.max_user_watches`) the watcher says so once on standard error and falls back
/// to polling every second: it stats each file and compares its `FileIdentity`. Setting the
/// environment variable `CCSYNC_WATCH_MODE=poll` makes every `.automatic` watcher poll from
/// the start (read once per process); `Mode.polling(interval:)` does the same for one watcher.
///
/// `Sendable`: its state is behind a `Protected` in its core.
public final class FileWatcher: Sendable {
  /// How a watcher learns about changes.
  public enum Mode: Sendable, Equatable {
    /// inotify, falling back to polling every second where it is unavailable; polling
    /// from the start when the environment variable `CCSYNC_WATCH_MODE` is `poll`.
    case automatic
    /// Stat each watched file every `interval` and compare identities; no inotify.
    case polling(interval: Duration)
  }

  /// The watcher the process shares: one inotify instance and one thread, named
  /// `ccsync-watcher`, started on the first `watch`. It is never stopped.
  public static let shared = FileWatcher(mode: .automatic, threadName: "ccsync-watcher")

  /// Whether polling from the start was asked for with `CCSYNC_WATCH_MODE=poll`.
  static let environmentRequestsPolling: Bool = {
    let value = Environment.value("CCSYNC_WATCH_MODE")?.lowercased()
    return value == "poll" || value == "polling"
  }()

  private static let instanceCount = Atomic<Int>(0)

  let core: WatcherCore

  /// Creates a watcher with a thread of its own. Most code uses `FileWatcher.shared`.
  ///
  /// - Parameters:
  ///   - mode: `.automatic` (inotify, with the polling fallback) or `.polling(interval:)`.
  ///   - safetyRecheckInterval: how often every watch is woken with `.safetyRecheck` (and
  ///     its path resolved again) in case an event was missed; `nil` never.
  public convenience init(mode: Mode = .automatic, safetyRecheckInterval: Duration? = .seconds(5)) {
    let number = Self.instanceCount.wrappingAdd(1, ordering: .relaxed).newValue
    self.init(mode: mode, safetyRecheckInterval: safetyRecheckInterval,
              threadName: "ccsync-watch-\(number)")
  }

  /// The full initialiser, with what tests need: injected failures and a diagnostics sink.
  init(mode: Mode, safetyRecheckInterval: Duration? = .seconds(5), faults: WatcherFaults = WatcherFaults(),
       diagnostics: @escaping @Sendable (String) -> Void = { StandardStreams.writeLine($0, toStandardError: true) },
       threadName: String) {
    var pollInterval: Duration?
    switch mode {
    case .automatic: pollInterval = Self.environmentRequestsPolling ? .seconds(1) : nil
    case .polling(let interval): pollInterval = max(interval, .milliseconds(1))
    }
    core = WatcherCore(pollInterval: pollInterval, fallbackPollInterval: .seconds(1),
                       safetyRecheckInterval: safetyRecheckInterval, faults: faults,
                       diagnostics: diagnostics, threadName: threadName)
  }

  deinit { core.stop() }

  /// Starts watching `path` and returns the watch; changes made after this returns are seen.
  ///
  /// - Parameters:
  ///   - path: the file, absolute or relative to the current directory (made absolute now).
  ///     It need not exist, nor need its directory: the nearest existing ancestor is watched
  ///     until they appear. Symbolic links on the path are followed, and watched.
  ///   - handler: called on a thread of the watcher each time the file may have changed, one
  ///     call at a time for this watch, in order. It should return quickly (well under
  ///     2 ms): the calls for the watcher's watches are made one after another by the thread
  ///     that read the events, and a handler that runs longer has its thread's loop taken
  ///     over by another, so the calls of other watches may then overlap it. It may call
  ///     `cancel()` and `recheck(after:)`.
  /// - Returns: the watch; it stays active until cancelled or deinitialised.
  public func watch(_ path: String, handler: @escaping @Sendable (FileWatchReason) -> Void) -> FileWatch {
    // A relative path when the current directory was removed (nothing can appear in it any
    // more) is taken from `/`: a watch only reads, and the storage layer, which writes,
    // refuses such a path (see `StorageLocation.resolvePath(creatingDirectories:)`).
    let absolute = (try? absolutePath(path)) ?? normalizedPath(path)
    let id = core.register(path: absolute, handler: handler)
    return FileWatch(watcher: self, id: id, path: absolute)
  }

  /// Whether this watcher polls: asked for, or after falling back from inotify.
  public var usesPolling: Bool { core.state.withLock { $0.usesPolling } }

  /// The kernel id of the thread leading the watcher's loop once started, for tests
  /// (`/proc/self/task/ID`).
  var threadID: Int32? { core.state.withLock { $0.threadID } }

  /// How many inotify watches the watcher holds, for tests.
  var watchedDirectoryCount: Int { core.state.withLock { $0.directories.count } }
}
