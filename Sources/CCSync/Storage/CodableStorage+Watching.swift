import CCSyncSystem
import CCSyncJSON

/// Live reload: another process's write reaches this value, merged with pending local edits.
extension CodableStorage {
  /// How long a file that is empty or invalid right after an event is given to become valid
  /// (an in-place writer between truncate and write) before it is reported invalid.
  static var invalidFileGracePeriod: Duration { .milliseconds(50) }

  /// How long an empty file may stay empty before it is reported: a truncating writer
  /// (`echo >`, `cp`) on a loaded machine can take longer than the grace period between its
  /// truncation and its write, and a config file left empty on purpose is rare.
  static var emptyFileWritingWindow: Int64 { 1_000_000_000 }

  /// Whether the file at `path` is empty and was changed less than
  /// ``emptyFileWritingWindow`` ago: probably a writer between truncating and writing.
  static func mayBeMidWrite(_ path: String) -> Bool {
    guard let identity = (try? fileIdentity(atPath: path)) ?? nil, identity.size == 0 else { return false }
    let age = FileSystem.currentTime().nanoseconds(since: identity.modificationTime)
    return age >= 0 && age < emptyFileWritingWindow
  }

  func startWatching() {
    let token = FileWatcher.shared.watch(path) { [weak self] reason in
      self?.fileMayHaveChanged(reason)
    }
    watch.withLock { $0 = token }
  }

  /// Looks again (identity, then content) and takes what it finds: a new valid version is
  /// merged with pending edits; a missing file keeps the value; an invalid file keeps the
  /// value and is reported once the grace period has passed (an empty one once it has been
  /// empty for ``emptyFileWritingWindow``).
  func fileMayHaveChanged(_ reason: FileWatchReason) {
    // Every event naming the file compares contents, renames included: a file system may give
    // a new version the inode an older one just freed, with the same size and (within one
    // coarse timestamp tick) the same times, so after a missed version in between the identity
    // alone can look unchanged. Only the periodic checks trust the identity.
    let compareContents: Bool
    switch reason {
    case .poll, .safetyRecheck: compareContents = reason.contentMayChangeInPlace
    default: compareContents = true
    }
    let (observation, rank) = document.readIfChangedTracked(contentMayDiffer: compareContents)
    switch observation {
    case .unchanged:
      return
    case .changed(let json):
      options.logger.log(.debug, "'\(path)' changed on disk (\(reason)); reloading")
      if let delivery = adopt(json, origin: .external, saved: nil, rank: rank) { observers.deliver(delivery) }
    case .missing:
      state.withLock { $0.fileState = .missing }
      options.logger.log(.debug, "'\(path)' was removed; keeping the value in memory")
    case .invalid(let error):
      if case .requested = reason, !CodableStorage.mayBeMidWrite(path) {
        let alreadyReported = state.withLock { state -> Bool in
          defer { state.fileState = .invalid(error.description) }
          return state.fileState == .invalid(error.description)
        }
        if !alreadyReported { report(error) }
      } else {
        watch.withLock { $0 }?.recheck(after: CodableStorage.invalidFileGracePeriod)
      }
    }
  }
}
