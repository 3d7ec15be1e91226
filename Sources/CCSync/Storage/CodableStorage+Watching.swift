import CCSyncSystem
import CCSyncJSON

/// Live reload: another process's write reaches this value, merged with pending local edits.
extension CodableStorage {
  /// How long a document that is empty or invalid right after an event is given to become
  /// valid (an in-place writer between truncate and write) before it is reported invalid.
  static var invalidFileGracePeriod: Duration { .milliseconds(50) }

  /// Starts the store's watch; its hints become reloads on this storage's ``ReloadQueue``.
  func startWatching() {
    let token = document.store.watch { [weak self] hint in
      guard let self else { return }
      reloads.schedule(hint) { [weak self] hint in self?.storeMayHaveChanged(hint) }
    }
    watch.withLock { $0 = token }
  }

  /// Looks again (identity, then content) and takes what it finds: a new valid version is
  /// merged with pending edits; a missing document keeps the value; an invalid one keeps the
  /// value and is reported once the grace period has passed (an empty file once it has been
  /// empty for a second, see ``DocumentStore/mayBeMidWrite()``).
  func storeMayHaveChanged(_ hint: ChangeHint) {
    let (observation, rank) = document.readIfChangedTracked(contentMayDiffer: hint.contentMayDiffer, current: hint.current)
    switch observation {
    case .unchanged:
      if hint.schemaMayHaveChanged { judgeKeptVersionAgain() }
    case .changed(let json):
      options.logger.log(.debug, "'\(path)' changed (\(hint)); reloading")
      let (delivery, failure) = adopt(json, origin: .external, saved: nil, rank: rank)
      if let delivery { observers.deliver(delivery) }
      if let failure { report(failure) } else { followSchema(of: json) }
    case .missing:
      state.withLock { $0.fileState = .missing }
      options.logger.log(.debug, "'\(path)' was removed; keeping the value in memory")
    case .invalid(let error):
      if hint.isRequestedRecheck, !document.store.mayBeMidWrite() {
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
