import CCSyncSystem
import CCSyncJSON

/// Live reload: another process's write reaches this value, merged with pending local edits.
extension CodableStorage {
  /// Makes this storage's follower of the document (``DocumentFollower``) and, when the
  /// storage watches, starts it: each version it adopts is merged with pending edits, on the
  /// thread of the follower's look (the file watcher's early in its turn, otherwise a reload
  /// thread). Only a storage that watches its document follows its schema.
  func startFollowing() {
    let follower = DocumentFollower(document: document, followsSchema: options.watchesForChanges) { [weak self] event in
      self?.followed(event)
    }
    self.follower.withLock { $0 = follower }
    if options.watchesForChanges { follower.start() }
  }

  /// Looks at the document now for `hint`, on the calling thread, as the follower does for
  /// its store's hints (tests stage races with it).
  func storeMayHaveChanged(_ hint: ChangeHint) {
    follower.withLock { $0 }?.look(hint)
  }

  /// Takes what the follower found: a new version is merged with pending edits and observers
  /// hear of it; a missing document keeps the value; a refused or invalid one keeps the value
  /// and is reported (``fileState`` says why): the follower tells each once per version.
  func followed(_ event: DocumentFollower.Event) {
    switch event {
    case .changed(let json, let rank, let cause):
      options.logger.log(.debug, "'\(path)' changed (\(cause)); reloading")
      let (delivery, failure) = adopt(json, origin: .external, saved: nil, rank: rank)
      if let delivery { observers.deliver(delivery) }
      if let failure { report(failure) }
    case .missing:
      state.withLock { $0.fileState = .missing }
      options.logger.log(.debug, "'\(path)' was removed; keeping the value in memory")
    case .rejected(let error), .invalid(let error):
      keepValue(refusing: error)
    case .refused(let error):
      report(.store(error))
    case .schemaChanged:
      break  // nothing refused, nothing new to adopt
    }
  }

  /// Records that the version found is not taken (``fileState`` says why, by
  /// `StorageState.readFailed(_:atStart:)`: a look that could not ask the store leaves it as
  /// the last look learned) and reports it.
  func keepValue(refusing error: StorageError) {
    state.withLock { $0.readFailed(error, atStart: false) }
    report(error)
  }
}
