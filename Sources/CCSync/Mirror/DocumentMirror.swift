import CCSyncJSON
import CCSyncSystem
import Dispatch

/// Keeps a local file and an etcd key one document, both ways (`ccsync mirror`;
/// docs/ARCHITECTURE.md, "The mirror").
///
/// Every change to either side (an event of the file's watcher or the key's watch) starts a
/// sync, one at a time on the mirror's own queue: both sides are read, each side's changes
/// since the last agreed version are merged field by field (``MirrorMerge``: the key wins a
/// field both changed), the key gets the file's changes by compare-and-swap and the file the
/// key's under its lock (so a local writer's concurrent change survives), and the merged
/// document is recorded as agreed (``MirrorHistory``). What a sync wrote comes back as events
/// that find nothing new: a mirror never sends back what it received.
///
/// - No history (a first run): when only one side exists it is copied to the other; when
///   both exist and differ the preferred side (the key unless told otherwise) wins and the
///   other's version is kept beside it (`FILE.conflict-TIMESTAMP`, `KEY.conflict-TIMESTAMP`).
/// - A side that is missing is recreated from the other; deletions are not mirrored.
/// - A side that is not valid JSON is reported (once) and nothing is synced until it is
///   valid again: the other side keeps its last valid version.
/// - While the cluster cannot be reached the mirror says so once, keeps running (the file
///   never depends on the cluster) and tries again every second; local edits made meanwhile
///   are merged and pushed when it answers.
///
/// `Sendable`: its state is behind a `Protected`; syncs run one at a time on its queue.
package final class DocumentMirror: Sendable {
  /// Which side wins when both exist, differ and have no common history.
  package enum Preference: Sendable {
    case key
    case file
  }

  private struct State {
    var watches: [any StoreWatch] = []
    var historyLock: FileLock?
    /// Whether the first sync has been tried (then `firstSync` has been called).
    var triedOnce = false
    var firstSync: (@Sendable () -> Void)?
    /// The problem last reported for the pair (an outage, an invalid side), so each is said
    /// once.
    var reported: String?
    var retryScheduled = false
    var stopped = false
  }

  /// The local file, as given.
  package let filePath: String
  /// The key.
  package let location: EtcdLocation
  private let file: SharedDocument
  private let sharedFile: SharedFile
  private let key: SharedDocument
  private let history: MirrorHistory
  private let preference: Preference
  private let logger: DiagnosticLog
  private let syncs = ReloadQueue(label: "ccsync.mirror")
  private let state = Protected(State())
  /// How long to wait before trying a cluster that did not answer again.
  static let retryDelay: Duration = .seconds(1)

  /// A mirror of `filePath` and `location`; nothing happens until ``start(firstSync:)``.
  package init(filePath: String, location: EtcdLocation, preference: Preference = .key, logger: DiagnosticLog = .standardError) {
    self.filePath = filePath
    self.location = location
    sharedFile = SharedFile(path: filePath, logger: logger)
    file = SharedDocument(file: sharedFile)
    key = SharedDocument(etcd: location, logger: logger)
    history = MirrorHistory(filePath: filePath, key: location.key)
    self.preference = preference
    self.logger = logger
  }

  /// Claims the pair (a second mirror of the same file is refused), starts watching both
  /// sides and runs the first sync; `firstSync` is called once that sync has been tried
  /// (done, or the cluster found unreachable: the file is served either way).
  /// - Throws: ``StoreError/lockUnavailable(path:)`` when another mirror runs for the file.
  package func start(firstSync: @escaping @Sendable () -> Void) throws(StoreError) {
    let lock = try history.claim()
    state.withLock { state in
      state.historyLock = lock
      state.firstSync = firstSync
    }
    let schedule: @Sendable (ChangeHint) -> Void = { [weak self] hint in self?.scheduleSync(hint) }
    let watches = [file.store.watch(schedule), key.store.watch(schedule)]
    state.withLock { $0.watches = watches }
    scheduleSync(ChangeHint(contentMayDiffer: true, isRequestedRecheck: false, description: "start"))
  }

  /// Stops watching and releases the pair; a sync under way finishes.
  package func stop() {
    let (watches, lock) = state.withLock { state in
      state.stopped = true
      defer {
        state.watches = []
        state.historyLock = nil
      }
      return (state.watches, state.historyLock)
    }
    for watch in watches { watch.cancel() }
    lock?.release()
  }

  private func scheduleSync(_ hint: ChangeHint) {
    syncs.schedule(hint) { [weak self] _ in self?.sync() }
  }

  /// One sync: read both sides, merge, write, record. Errors are reported, never thrown.
  private func sync() {
    guard !state.withLock(\.stopped) else { return }
    let outcome: Outcome
    do {
      outcome = try syncOnce()
    } catch {
      outcome = .failed(error)
    }
    settle(outcome)
  }

  /// How a sync ended.
  private enum Outcome {
    /// In sync (or nothing to do).
    case done
    /// A side is not valid JSON, or the cluster could not be reached: report, retry later.
    case failed(StorageError)
  }

  private func syncOnce() throws(StorageError) -> Outcome {
    let fileValue = try file.read()
    let keyValue = try key.read()
    let agreed = try history.agreedVersion()
    switch (fileValue, keyValue) {
    case (nil, nil):
      return .done
    case (let fileValue?, nil):
      try writeKey(replacing: nil, with: fileValue)
      try history.record(fileValue)
    case (nil, let keyValue?):
      try writeFile(with: keyValue)
      try history.record(keyValue)
    case (let fileValue?, let keyValue?):
      guard let agreed else {
        try firstMeeting(file: fileValue, key: keyValue)
        return .done
      }
      let merge = MirrorMerge(agreed: agreed, file: fileValue, key: keyValue)
      for conflict in merge.conflicts {
        let lost = conflict.lostValue.map { $0.formatted(.compact) } ?? "(removed)"
        logger.log(.warning, "mirror '\(filePath)': '\(conflict.path)' changed on both sides; the key's value kept, the file's \(lost) lost")
      }
      if !merge.toKey.isEmpty { try key.updateDocument(missingFile: .create) { merge.toKey.applied(to: $0) } }
      if !merge.toFile.isEmpty { try file.updateDocument(missingFile: .create) { merge.toFile.applied(to: $0) } }
      if merge.merged != agreed { try history.record(merge.merged) }
    }
    return .done
  }

  /// Both sides exist with no history: the preferred side wins; the other's differing version
  /// is kept beside it first.
  private func firstMeeting(file fileValue: JSONValue, key keyValue: JSONValue) throws(StorageError) {
    if fileValue == keyValue {
      try history.record(keyValue)
      return
    }
    switch preference {
    case .key:
      let copy = try storeCall { () throws(StoreError) in try sharedFile.keepCopy(of: SharedDocument.documentBytes(fileValue), label: "conflict") }
      logger.log(.warning, "mirror '\(filePath)': the file differed from the key; the key's version taken, the file's kept as '\(copy)'")
      try writeFile(with: keyValue)
      try history.record(keyValue)
    case .file:
      var copyLocation = location
      copyLocation.key += ".conflict-" + FileSystem.utcTimestampForFileName()
      try SharedDocument(etcd: copyLocation, logger: logger).updateDocument(missingFile: .create) { _ in keyValue }
      logger.log(.warning, "mirror '\(filePath)': the key differed from the file; the file's version taken, the key's kept as '\(copyLocation.key)'")
      try writeKey(replacing: keyValue, with: fileValue)
      try history.record(fileValue)
    }
  }

  /// Makes the key hold `value` (it held `old`, or nothing).
  private func writeKey(replacing old: JSONValue?, with value: JSONValue) throws(StorageError) {
    let changes = JSONChangeSet(from: old ?? .null, to: value)
    try key.updateDocument(missingFile: .create) { current in old == nil ? value : changes.applied(to: current) }
  }

  /// Makes the file hold `value`.
  private func writeFile(with value: JSONValue) throws(StorageError) {
    try file.updateDocument(missingFile: .create) { _ in value }
  }

  /// Reports what a sync found (once per problem), schedules a retry after a failure, and
  /// calls `firstSync` after the first.
  private func settle(_ outcome: Outcome) {
    let problem: String?
    switch outcome {
    case .done: problem = nil
    case .failed(let error): problem = error.description
    }
    let (report, recovered, firstSync, retry) = state.withLock { state in
      let report = problem.flatMap { $0 == state.reported ? nil : $0 }
      let recovered = problem == nil && state.reported != nil
      state.reported = problem
      let firstSync = state.triedOnce ? nil : state.firstSync
      state.triedOnce = true
      state.firstSync = nil
      let retry = problem != nil && !state.retryScheduled && !state.stopped
      if retry { state.retryScheduled = true }
      return (report, recovered, firstSync, retry)
    }
    if let report { logger.log(.error, "mirror '\(filePath)': \(report); retrying, the file is kept as it is") }
    if recovered { logger.log(.warning, "mirror '\(filePath)' <-> '\(location)': in sync again") }
    firstSync?()
    if retry {
      let (seconds, attoseconds) = DocumentMirror.retryDelay.components
      let delay = DispatchTimeInterval.nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
      DispatchQueue.global().asyncAfter(deadline: .now() + delay) { [weak self] in
        guard let self else { return }
        state.withLock { $0.retryScheduled = false }
        scheduleSync(ChangeHint(contentMayDiffer: true, isRequestedRecheck: false, description: "retry"))
      }
    }
  }
}

extension SharedDocument {
  /// ``update(wait:invalidFile:missingFile:writes:_:)`` for a mirror: `transform` gives the
  /// new document from the current one; an invalid current document is left alone and
  /// reported (``StorageError/invalidJSON(path:_:)``), never replaced.
  fileprivate func updateDocument(
    missingFile: MissingFilePolicy, _ transform: (JSONValue) -> JSONValue
  ) throws(StorageError) {
    do {
      try update(invalidFile: .fail, missingFile: missingFile) { document in document = transform(document) }
    } catch let error as StorageError {
      throw error
    } catch {
      throw .encodingFailed(path: name, message: "\(error)")
    }
  }
}
