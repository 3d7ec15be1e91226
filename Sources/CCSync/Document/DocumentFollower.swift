import CCSyncJSON
import CCSyncSystem

/// Follows one document's versions as other processes and hosts write them: the one place
/// where a version is adopted (docs/ARCHITECTURE.md, "Following a document"). Every reader
/// of changes (a ``CodableStorage``, `ccsync watch`, the mirror, an etcd lock's holder) is a
/// follower's subscriber.
///
/// A follower owns its document's watch and does, for every hint of it:
/// - merges the hints that come while a look waits or runs into one more look, and looks
///   through its ``ReloadQueue``: on the file watcher's thread when the news comes early in
///   the watcher's turn (``InlineReload``; a standby thread takes the watcher's loop over if
///   the look outlasts ``LoopHandOver/bound``), otherwise on the process's reload threads, so
///   a subscriber that blocks holds up this document's later looks and no other's;
/// - looks again, identity first (``SharedDocument/readIfChangedTracked(contentMayDiffer:current:)``),
///   taking the version an event carried (an etcd watch event's value) instead of reading,
///   and dropping news older than the version recorded (stale news);
/// - passes each new version through the document's gate before it is reported changed;
/// - follows the schema that judged the version taken, so a change of the schema alone has
///   the version last seen judged again: the version kept, reported when it no longer passes;
///   a version refused before, taken when it passes now;
/// - waits out ``FollowGrace/invalid`` before it reports a version that is not valid (a
///   writer half way through an in-place write), the same for every subscriber;
/// - reports a refused or invalid version once per version and reason
///   (``SharedDocument/isFirstReport(of:)``): the same version looked at again, or judged
///   again with the same verdict, is not reported again; another version is, whatever its
///   reason. Its subscribers report what they hear as they hear it, with no check of their own.
///
/// Its subscriber hears ``Event``s, in the order the versions were recorded, one at a time.
///
/// `Sendable`: its state is behind a `Protected`; looks run one at a time on its queue.
package final class DocumentFollower: Sendable {
  /// What a look found, as its subscriber hears it.
  package enum Event: Sendable {
    /// Another version, valid and passed by the gate, recorded under `rank` (see
    /// ``SharedDocument/readIfChangedTracked(contentMayDiffer:current:)``); `cause`: what the
    /// news of it said, for diagnostics.
    case changed(JSONValue, rank: VersionTracking.Rank?, cause: ChangeCause)
    /// The document does not exist (any more).
    case missing
    /// The gate refused a version (or refuses the version kept, its schema having changed):
    /// it is not adopted. Once per version and reason.
    case rejected(StorageError)
    /// A version that is not valid (or could not be read) and stayed so for the grace. Once
    /// per version and reason (a document that could not be read: once per reason, until a
    /// version is read).
    case invalid(StorageError)
    /// The store refused to watch (credentials, permission, TLS): no change comes until that
    /// is mended. The watch keeps trying.
    case refused(StoreError)
    /// The schema that judges the version kept changed, and nothing new is refused: the
    /// version kept passes it (or was judged and reported before). A subscriber that holds a
    /// refused version back (the mirror) judges it again now, rather than on a timer.
    case schemaChanged
  }

  private struct State {
    /// The hints not looked at yet, in order, when every version is looked at.
    var queued: [ChangeHint] = []
    var watch: (any StoreWatch)?
    /// The watch of the store of the schema that judges the version taken, with its name.
    var schemaWatch: (name: String, watch: any StoreWatch)?
    /// The `$schema` of the version whose schema is followed (`.some(nil)`: it had none), so
    /// that a version naming the same one costs no look for its store.
    var schemaFollowedFor: String??
    /// The watch's refusal last reported, so that each is said once until a version is taken.
    var reportedRefusal: String?
    var stopped = false
  }

  /// The document followed.
  package let document: SharedDocument
  private let followsSchema: Bool
  private let looksAtEveryVersion: Bool
  private let handler: @Sendable (Event) -> Void
  private let looks = ReloadQueue()
  private let state = Protected(State())

  /// A follower of `document`; nothing happens until ``start()``.
  /// - Parameters:
  ///   - followsSchema: watch the schema of the version taken too (see ``followSchema(of:)``).
  ///   - everyVersion: look at each hint on its own, in order, instead of merging those that
  ///     wait: where the news carries each version (an etcd key's watch), every version is
  ///     reported, not only the latest (`ccsync watch`).
  ///   - handler: hears the events, on the thread of the look (see above), one at a time.
  init(
    document: SharedDocument, followsSchema: Bool, everyVersion: Bool = false, handler: @escaping @Sendable (Event) -> Void
  ) {
    self.document = document
    self.followsSchema = followsSchema
    looksAtEveryVersion = everyVersion
    self.handler = handler
  }

  deinit {
    stop()
  }

  /// Starts the document's watch. Read the document first (``SharedDocument/read()``): an
  /// etcd key's watch then starts at the revision after the one read, missing none.
  func start() {
    let watch = document.watchStore { [weak self] hint in self?.schedule(hint) }
    let replaced = state.withLock { state -> (any StoreWatch)? in
      guard !state.stopped else { return watch }
      defer { state.watch = watch }
      return state.watch
    }
    replaced?.cancel()
  }

  /// Stops following: the watches end; a look already under way may still report.
  package func stop() {
    let (watch, schemaWatch) = state.withLock { state in
      state.stopped = true
      defer {
        state.watch = nil
        state.schemaWatch = nil
      }
      return (state.watch, state.schemaWatch?.watch)
    }
    watch?.cancel()
    schemaWatch?.cancel()
  }

  /// Looks at the document again now, as a hint from its store would have it do.
  package func lookAgain(_ reason: String) {
    schedule(ChangeHint(contentMayDiffer: true, isRequestedRecheck: false, description: reason))
  }

  private func schedule(_ hint: ChangeHint) {
    guard looksAtEveryVersion else {
      looks.schedule(hint) { [weak self] hint in self?.look(hint) }
      return
    }
    state.withLock { $0.queued.append(hint) }
    looks.schedule(hint) { [weak self] _ in self?.lookAtQueued() }
  }

  /// Looks at each queued hint in turn (the queue's merged hint only says there are some).
  private func lookAtQueued() {
    while let hint = state.withLock({ state -> ChangeHint? in state.queued.isEmpty ? nil : state.queued.removeFirst() }) {
      look(hint)
    }
  }

  /// One look, for the merged `hint`, on the calling thread.
  func look(_ hint: ChangeHint) {
    guard !state.withLock({ $0.stopped }) else { return }
    if let refusal = hint.refusal {
      let isNew = state.withLock { state -> Bool in
        defer { state.reportedRefusal = refusal.description }
        return state.reportedRefusal != refusal.description
      }
      if isNew { handler(.refused(refusal)) }
      return
    }
    let (observation, rank) = document.readIfChangedTracked(contentMayDiffer: hint.contentMayDiffer, current: hint.current)
    switch observation {
    case .unchanged:
      guard hint.schemaMayHaveChanged else { return }
      switch document.judgeSeenVersionAgain() {
      case .refused(let failure) where document.isFirstReport(of: failure):
        handler(.rejected(failure))
      case .passesNow(let json, let rank):
        handler(.changed(json, rank: rank, cause: .text("its schema changed and passes the version it refused")))
        followSchema(of: json)
      case .refused, .unchanged:
        handler(.schemaChanged)
      }
    case .changed(let json):
      state.withLock { $0.reportedRefusal = nil }
      handler(.changed(json, rank: rank, cause: hint.cause))
      followSchema(of: json)
    case .missing:
      state.withLock { $0.reportedRefusal = nil }
      handler(.missing)
    case .invalid(let error):
      guard FollowGrace.mayBePartialWrite(error) else {
        report(.rejected(error), error)  // read whole: the gate's verdict stands
        return
      }
      switch document.partialWrite() {
      case .impossible:
        report(.invalid(error), error)
      case .possible where hint.isRequestedRecheck:
        report(.invalid(error), error)  // invalid for the whole grace
      case .possible, .likely:
        // Looked at again after the grace; an event meanwhile starts it anew (see
        // ``ChangeHint/merged(with:)``).
        state.withLock { $0.watch }?.recheck(after: FollowGrace.invalid)
      }
    }
  }

  /// Tells the subscriber of `problem`, found in the version just looked at, unless it was
  /// reported for that version already.
  private func report(_ event: Event, _ problem: StorageError) {
    if document.isFirstReport(of: problem) { handler(event) }
  }

  /// Watches the store of the schema that judges `json`, the version just taken, so that a
  /// change of the schema alone has that version judged again; moves the watch when a new
  /// version's `$schema` names another schema, and drops it when none applies. The follower
  /// does this for every version it reports changed; a subscriber calls it for the version it
  /// read itself before ``start()``.
  package func followSchema(of json: JSONValue) {
    guard followsSchema else { return }
    let named = DocumentGate.schemaPath(in: json)
    guard state.withLock({ state in
      defer { state.schemaFollowedFor = .some(named) }
      return state.schemaFollowedFor != .some(named)
    }) else { return }
    let schemaStore = document.schemaStore(for: json)
    guard state.withLock({ $0.stopped ? schemaStore?.name : $0.schemaWatch?.name }) != schemaStore?.name else { return }
    let watch = schemaStore?.watch { [weak self] _ in
      self?.schedule(ChangeHint(contentMayDiffer: false, isRequestedRecheck: false, description: "its schema changed", schemaMayHaveChanged: true))
    }
    let replaced = state.withLock { state -> (any StoreWatch)? in
      guard !state.stopped else { return watch }
      let previous = state.schemaWatch?.watch
      state.schemaWatch = zip(schemaStore?.name, watch).map { (name: $0, watch: $1) }
      return previous
    }
    replaced?.cancel()
  }
}

extension SharedDocument {
  /// Follows this document (see ``DocumentFollower``): its watch starts now; `handler` hears
  /// each version adopted, refused or found invalid, one at a time, on the thread of the look
  /// (see ``DocumentFollower``). Read the document first: an etcd key's watch then starts
  /// after the revision read.
  /// - Parameters:
  ///   - followsSchema: also watch the schema that judges the version taken, and judge the
  ///     version kept again when it changes (default).
  ///   - everyVersion: report each version the news carries, in order, not only the latest
  ///     (see ``DocumentFollower/init(document:followsSchema:everyVersion:handler:)``).
  /// - Returns: the follower; following stops when it is stopped or released.
  package func follow(
    followsSchema: Bool = true, everyVersion: Bool = false, _ handler: @escaping @Sendable (DocumentFollower.Event) -> Void
  ) -> DocumentFollower {
    let follower = DocumentFollower(document: self, followsSchema: followsSchema, everyVersion: everyVersion, handler: handler)
    follower.start()
    return follower
  }
}

/// Both values, or `nil` when either is missing.
private func zip<A, B>(_ a: A?, _ b: B?) -> (A, B)? {
  guard let a, let b else { return nil }
  return (a, b)
}
