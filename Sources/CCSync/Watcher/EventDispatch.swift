import CCSyncSystem

/// Turning one batch of inotify events into wake-ups. Runs on the watcher thread under the
/// state lock.
extension WatcherState {
  /// Matches each event to the registrations whose path it concerns, coalescing: however
  /// many events one registration gets in the batch, it is woken once, with the strongest
  /// reason. Events naming other entries (editor side files, temp files, `NAME.lock`) wake
  /// nobody: only the exact names on a registration's resolved path match.
  ///
  /// The names each directory's registrations watch are looked up in `namedPoints`, an index
  /// made when an event first needs it and kept until a registration or a watch changes: a
  /// thousand files watched in one directory cost one pass over them then, not one per event.
  mutating func handle(_ events: [InotifyEvent]) {
    var needsRefresh: Set<RegistrationID> = []
    var overflowed = false
    for event in events {
      if event.has(InotifyMask.overflow) {
        overflowed = true
        continue
      }
      if event.has(InotifyMask.ignored) {
        handleIgnored(event.watch, needsRefresh: &needsRefresh)
        continue
      }
      guard let directory = directories[event.watch] else { continue }
      if event.has(InotifyMask.deleteSelf | InotifyMask.moveSelf) {
        // The watched directory itself went away or moved: the path must be resolved again.
        needsRefresh.formUnion(directory.references.keys)
        continue
      }
      if namedPoints[event.watch] == nil { namedPoints[event.watch] = watchPointsByName(event.watch, directory) }
      for (id, point) in namedPoints[event.watch]?[event.name] ?? [] {
        if point.isTarget {
          wake(id, .directoryEvent(inPlaceWrite: event.has(InotifyMask.inPlaceWrite)))
          // A new entry under the file's name may be a link, leading elsewhere. Only a link
          // there changes what the path resolves to: a regular file (the usual rename-replace),
          // a directory or nothing at all leave the same watch points, so one `lstat` spares
          // resolving the whole path again on every save. The `lstat` comes after the event,
          // so a link put there later has an event of its own.
          if event.has(InotifyMask.nameChanged) && isSymbolicLinkOrUnknown(point.directory, point.name) {
            needsRefresh.insert(id)
          }
        } else {
          wake(id, .directoryEvent(inPlaceWrite: false))
          needsRefresh.insert(id)
        }
      }
    }
    if overflowed {
      revalidateAll(reason: .overflow)
    }
    for id in needsRefresh where refresh(id) {
      wake(id, .rearmed)
    }
  }

  /// The entries on the registrations' paths that `watch` (the inotify watch on `directory`)
  /// covers, by name: each registration's points whose directory it has armed with this watch.
  func watchPointsByName(_ watch: Int32, _ directory: DirectoryWatch) -> [String: [(RegistrationID, WatchPoint)]] {
    var index: [String: [(RegistrationID, WatchPoint)]] = [:]
    for id in directory.references.keys {
      guard let registration = registrations[id] else { continue }
      for point in registration.watchPoints where registration.armed[point.directory]?.watch == watch {
        index[point.name, default: []].append((id, point))
      }
    }
    return index
  }

  /// `IN_IGNORED`: a watch ended. When we removed it ourselves the event is expected and
  /// swallowed; otherwise the kernel dropped it (directory deleted, file system unmounted),
  /// and its registrations must find their path again.
  mutating func handleIgnored(_ watch: Int32, needsRefresh: inout Set<RegistrationID>) {
    if let pending = ownRemovals[watch] {
      ownRemovals[watch] = pending > 1 ? pending - 1 : nil
      return
    }
    guard let directory = directories.removeValue(forKey: watch) else { return }
    namedPoints = [:]
    for id in directory.references.keys {
      if var registration = registrations[id] {
        registration.armed = registration.armed.filter { $0.value.watch != watch }
        registrations[id] = registration
      }
      needsRefresh.insert(id)
    }
  }

  /// Checks every registration's path and watched directories again, adding every watch
  /// anew (a directory may have been replaced while events were lost, even by one with the
  /// same inode number) and wakes every registration with `reason`.
  mutating func revalidateAll(reason: FileWatchReason) {
    for id in Array(registrations.keys) {
      _ = refresh(id, rearmingAll: true)
      wake(id, reason)
    }
  }
}

/// Whether `name` in `directory` is a symbolic link now; `true` too when it cannot be
/// examined, so that the caller resolves the path again rather than trust a guess.
private func isSymbolicLinkOrUnknown(_ directory: String, _ name: String) -> Bool {
  let path = FilePath.join(directory, name)
  do {
    return try FileSystem.linkStatus(path)?.kind == .symbolicLink
  } catch {
    return true
  }
}
