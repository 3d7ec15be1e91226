import CCSyncSystem

/// Identifies one `FileWatch` inside its watcher.
typealias RegistrationID = UInt64

/// Failures a test can inject, to reach the fallbacks without exhausting the machine's
/// inotify limits.
struct WatcherFaults: Sendable {
  /// Makes `inotify_init1` fail with this `errno`.
  var initError: Int32? = nil
  /// Makes `inotify_add_watch` fail with `ENOSPC` once this many directories are watched.
  var watchLimit: Int? = nil
}

/// One `FileWatch` as the watcher thread sees it.
struct Registration {
  let path: String
  let handler: @Sendable (FileWatchReason) -> Void
  /// The entries the path depends on, from the last resolution.
  var watchPoints: [WatchPoint] = []
  /// The directories this registration holds a watch on, by path.
  var armed: [String: ArmedDirectory] = [:]
  /// Set when some directory could not be watched (`EACCES`...): this registration is
  /// polled like in polling mode, while its other watches keep working.
  var needsPolling = false
  /// The identity polling last saw; `nil` while the file is missing.
  var polledIdentity: FileIdentity? = nil
  /// When `FileWatch.recheck(after:)` asked to be woken.
  var recheckDeadlines: [ContinuousClock.Instant] = []
}

/// A directory watch one registration holds.
struct ArmedDirectory: Equatable {
  var watch: Int32
  var identity: DirectoryIdentity
}

/// One inotify watch, shared by every registration that needs its directory: the kernel
/// returns the same watch descriptor for the same inode, so it is counted, not duplicated.
struct DirectoryWatch {
  var path: String
  var identity: DirectoryIdentity
  /// How many times each registration holds this watch.
  var references: [RegistrationID: Int]
}

/// Everything a watcher knows, guarded by `WatcherCore.state`'s mutex. Only the watcher
/// thread reads events, but any thread may add or cancel registrations, so every change goes
/// through the lock; handlers are called outside it.
struct WatcherState {
  /// The polling interval when polling; `nil` while inotify is in use.
  var pollInterval: Duration?
  let fallbackPollInterval: Duration
  let safetyRecheckInterval: Duration?
  let faults: WatcherFaults
  let diagnostics: @Sendable (String) -> Void

  var inotify: InotifyInstance?
  /// Instances given up after a fallback, closed by the thread once `poll` has returned.
  var retiredInotify: [InotifyInstance] = []
  var wakeUp: WakeUpChannel?
  var thread: BackgroundThread?
  var threadID: Int32?
  var stopping = false

  var registrations: [RegistrationID: Registration] = [:]
  var nextRegistrationID: RegistrationID = 1
  /// The watches by descriptor.
  var directories: [Int32: DirectoryWatch] = [:]
  /// Descriptors we removed ourselves whose `IN_IGNORED` is still to come, so that it is not
  /// taken for the directory vanishing (and cannot hit a later watch reusing the number).
  var ownRemovals: [Int32: Int] = [:]
  /// Wake-ups found but not yet delivered, one merged reason per registration.
  var wakes: [RegistrationID: FileWatchReason] = [:]
  var nextSafetyRecheck: ContinuousClock.Instant?
  var nextPoll: ContinuousClock.Instant?

  var usesPolling: Bool { pollInterval != nil }

  /// Records a wake-up for `id`, merged with any already pending.
  mutating func wake(_ id: RegistrationID, _ reason: FileWatchReason) {
    guard registrations[id] != nil else { return }
    wakes[id] = wakes[id].map { $0.merged(with: reason) } ?? reason
  }

  /// The earliest moment the thread has something to do without an event.
  func nextDeadline() -> ContinuousClock.Instant? {
    var deadlines = [nextSafetyRecheck, nextPoll].compactMap { $0 }
    for registration in registrations.values {
      if let earliest = registration.recheckDeadlines.min() { deadlines.append(earliest) }
    }
    return deadlines.min()
  }

  /// Runs whatever timers are due at `now`: requested rechecks, polling, the safety re-check.
  mutating func fireTimers(now: ContinuousClock.Instant) {
    for (id, registration) in registrations where registration.recheckDeadlines.contains(where: { $0 <= now }) {
      registrations[id]?.recheckDeadlines.removeAll { $0 <= now }
      wake(id, .requested)
    }
    if let deadline = nextPoll, deadline <= now {
      pollIdentities()
      scheduleTimers(now: now)
    }
    if let deadline = nextSafetyRecheck, deadline <= now {
      // Every watch is added again: one whose directory was replaced unseen (its IN_IGNORED
      // lost in an overflow) by one with the same inode number looks alive otherwise.
      for id in registrations.keys {
        wake(id, refresh(id, rearmingAll: true) ? .rearmed : .safetyRecheck)
      }
      nextSafetyRecheck = nil
      scheduleTimers(now: now)
    }
  }

  /// Sets the polling and safety deadlines that are due but missing; clears them when there
  /// is nothing to watch, so an idle watcher sleeps without a timeout.
  mutating func scheduleTimers(now: ContinuousClock.Instant) {
    if registrations.isEmpty {
      nextSafetyRecheck = nil
      nextPoll = nil
      return
    }
    if let interval = safetyRecheckInterval, interval > .zero, nextSafetyRecheck == nil {
      nextSafetyRecheck = now + interval
    }
    let polled = usesPolling || registrations.values.contains { $0.needsPolling }
    if !polled {
      nextPoll = nil
    } else if nextPoll == nil || nextPoll! <= now {
      nextPoll = now + (pollInterval ?? fallbackPollInterval)
    }
  }
}

/// Polling: comparing each polled registration's file identity with the last one seen.
/// Used in polling mode (asked for, or after falling back from inotify) and for a
/// registration whose directory cannot be watched. Runs under the state lock.
extension WatcherState {
  /// Stats every polled registration's file (following links) and wakes those whose
  /// identity changed, including appearing and vanishing. An error other than "missing"
  /// (`EACCES`...) counts as missing.
  mutating func pollIdentities() {
    for (id, registration) in registrations where usesPolling || registration.needsPolling {
      let identity = (try? fileIdentity(atPath: registration.path)) ?? nil
      if identity != registration.polledIdentity {
        registrations[id]?.polledIdentity = identity
        wake(id, .poll)
      }
    }
  }
}
