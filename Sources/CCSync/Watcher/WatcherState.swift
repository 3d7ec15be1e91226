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
  /// Whether the first thread was started.
  var started = false
  /// The kernel id of the thread leading the loop now.
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
  /// When `FileWatch.recheck(after:)` asked to be woken, for the registrations that asked:
  /// kept apart from `registrations` so that each turn of the thread looks at these few,
  /// not at every registration.
  var recheckDeadlines: [RegistrationID: [ContinuousClock.Instant]] = [:]
  /// The registrations with a directory that cannot be watched (`Registration.needsPolling`).
  var polledRegistrations: Set<RegistrationID> = []
  /// The entries each inotify watch covers, by name, made when an event first needs them
  /// (see `watchPointsByName`), kept up to date as registrations change, and dropped when a
  /// watch ends.
  var namedPoints: [Int32: [String: [(RegistrationID, WatchPoint)]]] = [:]
  var nextSafetyRecheck: ContinuousClock.Instant?
  /// The registrations the safety re-check's pass under way has still to look at.
  var safetyRecheckPass: [RegistrationID] = []
  /// When that pass began: the next begins an interval later.
  var safetyRecheckPassStart = ContinuousClock.now
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
    for requested in recheckDeadlines.values {
      if let earliest = requested.min() { deadlines.append(earliest) }
    }
    return deadlines.min()
  }

  /// Runs whatever timers are due at `now`: requested rechecks, polling, the safety re-check.
  mutating func fireTimers(now: ContinuousClock.Instant) {
    for (id, requested) in recheckDeadlines where requested.contains(where: { $0 <= now }) {
      let later = requested.filter { $0 > now }
      recheckDeadlines[id] = later.isEmpty ? nil : later
      wake(id, .requested)
    }
    if let deadline = nextPoll, deadline <= now {
      pollIdentities()
      scheduleTimers(now: now)
    }
    if let deadline = nextSafetyRecheck, deadline <= now {
      recheckSlice(now: now)
    }
  }

  /// The most registrations one turn of the thread re-checks: a pass over more is spread
  /// over the first half of the interval, in 50 slices, so that a thousand watches do not
  /// stall the events of a turn (each is a path resolved again and its watches added again)
  /// nor wake a thousand reloads at once.
  static let safetyRecheckSlice = 32

  /// Re-checks the next slice of the safety re-check's pass (starting a pass over every
  /// registration when none is under way): every watch is added again, since one whose
  /// directory was replaced unseen (its IN_IGNORED lost in an overflow) by one with the same
  /// inode number looks alive otherwise. Each registration is re-checked once an interval.
  mutating func recheckSlice(now: ContinuousClock.Instant) {
    guard let interval = safetyRecheckInterval else { return }
    if safetyRecheckPass.isEmpty {
      safetyRecheckPass = registrations.keys.sorted()
      safetyRecheckPassStart = now
    }
    let sliceSize = max(Self.safetyRecheckSlice, (registrations.count + 49) / 50)
    for id in safetyRecheckPass.prefix(sliceSize) where registrations[id] != nil {
      wake(id, refresh(id, rearmingAll: true) ? .rearmed : .safetyRecheck)
    }
    safetyRecheckPass.removeFirst(min(sliceSize, safetyRecheckPass.count))
    if safetyRecheckPass.isEmpty {
      nextSafetyRecheck = max(now, safetyRecheckPassStart + interval)
    } else {
      nextSafetyRecheck = now + interval / 100
    }
  }

  /// Sets the polling and safety deadlines that are due but missing; clears them when there
  /// is nothing to watch, so an idle watcher sleeps without a timeout.
  mutating func scheduleTimers(now: ContinuousClock.Instant) {
    if registrations.isEmpty {
      nextSafetyRecheck = nil
      safetyRecheckPass = []
      nextPoll = nil
      return
    }
    if let interval = safetyRecheckInterval, interval > .zero, nextSafetyRecheck == nil {
      nextSafetyRecheck = now + interval
    }
    let polled = usesPolling || !polledRegistrations.isEmpty
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
