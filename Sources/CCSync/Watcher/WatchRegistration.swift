import CCSyncSystem

/// Registering, arming and releasing directory watches. All of it runs under the state lock.
extension WatcherState {
  /// Adds a registration for `path` (absolute) and arms its watches before returning, so a
  /// change made after `FileWatcher.watch` returns is seen.
  mutating func register(path: String, handler: @escaping @Sendable (FileWatchReason) -> Void) -> RegistrationID {
    let id = nextRegistrationID
    nextRegistrationID += 1
    var registration = Registration(path: path, handler: handler)
    registration.polledIdentity = (try? fileIdentity(atPath: path)) ?? nil
    registrations[id] = registration
    _ = refresh(id)
    scheduleTimers(now: .now)
    return id
  }

  /// Removes a registration and releases its watches. Pending wake-ups for it are dropped.
  /// - Returns: the registration's handler, for the caller to release after unlocking: the
  ///   closure may hold the last reference to something whose `deinit` cancels a watch,
  ///   which would take the lock again.
  mutating func unregister(_ id: RegistrationID) -> (@Sendable (FileWatchReason) -> Void)? {
    removeFromNamedPoints(id)
    guard let registration = registrations.removeValue(forKey: id) else { return nil }
    for armed in registration.armed.values { release(armed.watch, by: id) }
    wakes[id] = nil
    recheckDeadlines[id] = nil
    polledRegistrations.remove(id)
    scheduleTimers(now: .now)
    return registration.handler
  }

  /// Resolves the registration's path again and makes its watches match: arms directories
  /// that are new or were replaced, releases those no longer on the path. Resolves again after
  /// arming, until nothing changes, so a directory created between the resolution and the
  /// `inotify_add_watch` is not missed.
  ///
  /// - Parameter rearmingAll: add the watch of every directory on the path again, even those
  ///   whose identity is unchanged: after a queue overflow the `IN_IGNORED` of a deleted
  ///   directory may be lost, and a directory made in its place can get the same inode
  ///   number, so only `inotify_add_watch` can tell (it gives a new watch descriptor).
  /// - Returns: whether the watched entries changed (the subscriber should look again).
  mutating func refresh(_ id: RegistrationID, rearmingAll: Bool = false) -> Bool {
    guard var registration = registrations[id] else { return false }
    removeFromNamedPoints(id)
    defer { addToNamedPoints(id) }
    var changed = false
    var limitError: SystemError?
    for iteration in 0..<8 {
      let rearming = rearmingAll && iteration == 0
      let points = watchPoints(resolving: registration.path)
      if points != registration.watchPoints { changed = true }
      registration.watchPoints = points
      guard inotify != nil else { break }

      var desired: [String: DirectoryIdentity] = [:]
      for point in points where desired[point.directory] == nil {
        desired[point.directory] = point.directoryIdentity
      }
      var armedSomething = false
      var unwatchable = false
      for (directory, identity) in desired where rearming || registration.armed[directory]?.identity != identity {
        let previous = registration.armed[directory]
        switch addWatch(directory, identity: identity, for: id) {
        case .armed(let watch):
          registration.armed[directory] = ArmedDirectory(watch: watch, identity: identity)
          if watch != previous?.watch { armedSomething = true }  // the same one again is no change
        case .vanished:
          registration.armed[directory] = nil
          armedSomething = true  // Resolve again: the path changed under us.
        case .unwatchable where rearming && previous?.identity == identity,
          .limitReached where rearming && previous?.identity == identity:
          // Adding again the watch of a directory that is still the one watched failed (it
          // lost its read permission, or a limit was reached since): the watch it has works.
          continue
        case .unwatchable(let error):
          registration.armed[directory] = nil
          unwatchable = true
          if !registration.needsPolling {  // Say it once, not at every re-check.
            diagnostics("ccsync: cannot watch '\(directory)' (\(error)); polling '\(registration.path)' instead")
          }
        case .limitReached(let error):
          limitError = error
        }
        if let previous { release(previous.watch, by: id) }
        if limitError != nil { break }
      }
      for (directory, armed) in registration.armed where desired[directory] == nil {
        registration.armed[directory] = nil
        release(armed.watch, by: id)
      }
      registration.needsPolling = unwatchable
      if unwatchable { polledRegistrations.insert(id) } else { polledRegistrations.remove(id) }
      if armedSomething { changed = true }
      if !armedSomething || limitError != nil { break }
    }
    registrations[id] = registration
    if let limitError { fallBackToPolling(limitError) }
    return changed
  }

  /// Takes registration `id`'s entries out of the `namedPoints` indexes made so far, before
  /// its watch points or watches change: in place, so that registering the thousandth
  /// storage of a directory does not make the next event index all thousand again.
  mutating func removeFromNamedPoints(_ id: RegistrationID) {
    guard let registration = registrations[id] else { return }
    for point in registration.watchPoints {
      guard let watch = registration.armed[point.directory]?.watch, namedPoints[watch] != nil else { continue }
      namedPoints[watch]?[point.name]?.removeAll { $0.0 == id }
      if namedPoints[watch]?[point.name]?.isEmpty == true { namedPoints[watch]?[point.name] = nil }
    }
  }

  /// Puts registration `id`'s entries into the `namedPoints` indexes made so far (an index
  /// not made yet will be made whole when an event needs it).
  mutating func addToNamedPoints(_ id: RegistrationID) {
    guard let registration = registrations[id] else { return }
    for point in registration.watchPoints {
      guard let watch = registration.armed[point.directory]?.watch, namedPoints[watch] != nil else { continue }
      namedPoints[watch]?[point.name, default: []].append((id, point))
    }
  }

  enum AddWatchResult {
    case armed(Int32)
    case vanished
    case unwatchable(SystemError)
    case limitReached(SystemError)
  }

  /// Adds (or shares) the inotify watch on `directory` for registration `id`.
  mutating func addWatch(_ directory: String, identity: DirectoryIdentity, for id: RegistrationID) -> AddWatchResult {
    guard let inotify else { return .vanished }
    if let limit = faults.watchLimit, directories.count >= limit,
      !directories.values.contains(where: { $0.identity == identity })
    {
      return .limitReached(.inotifyWatchLimit(path: directory))
    }
    let watch: Int32
    do {
      watch = try inotify.addWatch(directory, mask: InotifyMask.directoryWatch)
    } catch {
      if error.isVanishedDirectory { return .vanished }
      if error.isInotifyWatchLimit { return .limitReached(error) }
      return .unwatchable(error)
    }
    if directories[watch] != nil {
      // In place: a copy of a directory's references (one per registration) per watch added
      // made creating N watches in one directory quadratic.
      directories[watch]?.references[id, default: 0] += 1
      directories[watch]?.path = directory
      directories[watch]?.identity = identity
    } else {
      directories[watch] = DirectoryWatch(path: directory, identity: identity, references: [id: 1])
    }
    return .armed(watch)
  }

  /// Drops one reference registration `id` holds on `watch`; removes the inotify watch when
  /// nobody holds it any more.
  mutating func release(_ watch: Int32, by id: RegistrationID) {
    guard let held = directories[watch]?.references[id] else { return }
    directories[watch]?.references[id] = held > 1 ? held - 1 : nil
    guard directories[watch]?.references.isEmpty == true else { return }
    directories[watch] = nil
    namedPoints[watch] = nil
    do {
      try inotify?.removeWatch(watch)
      // The kernel queued IN_IGNORED for it; remember to swallow it.
      ownRemovals[watch, default: 0] += 1
    } catch {
      // EINVAL: the kernel dropped the watch already (its directory was deleted) and sent
      // its own IN_IGNORED; there is nothing to swallow.
    }
  }

  /// Gives up inotify after `error` (a limit reached, or no inotify at all): prints one
  /// message naming the limit, then polls every registration's identity.
  mutating func fallBackToPolling(_ error: SystemError) {
    guard pollInterval == nil else { return }
    let interval = fallbackPollInterval
    diagnostics("ccsync: \(Self.limitDescription(error)) (\(error)); falling back to polling every \(Self.describe(interval))")
    pollInterval = interval
    if let inotify { retiredInotify.append(inotify) }
    inotify = nil
    directories = [:]
    ownRemovals = [:]
    namedPoints = [:]
    for (id, var registration) in registrations {
      registration.armed = [:]
      registration.polledIdentity = (try? fileIdentity(atPath: registration.path)) ?? nil
      registrations[id] = registration
      // Something may have changed while the watches were failing: look once.
      wake(id, .poll)
    }
    nextPoll = nil
    scheduleTimers(now: .now)
    wakeUp?.wakeUp()
  }

  static func limitDescription(_ error: SystemError) -> String {
    if error.isInotifyWatchLimit { return "inotify limit fs.inotify.max_user_watches reached" }
    if error.isInotifyInstanceLimit {
      return "inotify limit fs.inotify.max_user_instances (or the open-file limit) reached"
    }
    return "inotify unavailable"
  }

  static func describe(_ interval: Duration) -> String {
    let (seconds, attoseconds) = interval.components
    if attoseconds == 0 { return "\(seconds) s" }
    return "\(seconds * 1000 + attoseconds / 1_000_000_000_000_000) ms"
  }
}
