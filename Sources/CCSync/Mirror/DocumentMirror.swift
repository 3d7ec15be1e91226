import CCSyncJSON
import CCSyncSystem
import Dispatch

/// Keeps a local file and an etcd key one document, both ways (`ccsync mirror`; the rules in
/// docs/SEMANTICS.md, "Mirror", the design in docs/ARCHITECTURE.md, "The mirror").
///
/// Every change to either side (an event of the file's watcher or the key's watch) starts a
/// sync, one at a time on the mirror's own queue: both sides are read (the key from its
/// watch's news, or as last seen while in sync, without a range), each side's changes
/// since the last agreed version are merged field by field (``MirrorMerge``: the key wins a
/// field both changed, and a line names the value that lost), the key gets the file's
/// changes by compare-and-swap and the file the key's under its lock (so a local writer's
/// concurrent change survives), and the merged document is recorded as agreed
/// (``MirrorHistory``). What a sync wrote comes back as events that find nothing new: a
/// mirror never sends back what it received.
///
/// - No history (a first run): when only one side exists it is copied to the other; when
///   both exist and differ the preferred side (the key unless told otherwise) wins and the
///   other's version is kept beside it (`FILE.conflict-TIMESTAMP`, `KEY.conflict-TIMESTAMP`).
/// - A side that is missing is recreated whole from the other (a file that disappeared once
///   it has stayed missing for ``FollowGrace/missing``); deletions are not mirrored. A side
///   that appears or disappears while a sync writes makes it start again.
/// - A side that is not valid JSON is reported (once per version; a file only once its
///   follower reports it, still invalid after the one grace, ``FollowGrace``, being perhaps
///   written in place) and nothing is synced until it is valid again: the other side keeps
///   its last valid version. A version the gate refuses (the key's, or a local edit) is
///   reported once per version too: the pair of versions the sides hold names it. It is
///   judged again when either side or the schema changes (their followers start a sync),
///   not on a timer; a refusal by a check is also tried again every second, its verdict
///   depending perhaps on more than the versions.
/// - While the cluster cannot be reached the mirror says so once, keeps running (the file
///   never depends on the cluster) and tries again every second; local edits made meanwhile
///   are merged and pushed when it answers.
/// - A cluster that refuses the mirror (credentials, permission, TLS) before it was ever in
///   sync is a misconfiguration that retrying will not mend: the mirror tells its caller
///   (`refusedAtStart`) and stops trying. A refusal after it was in sync (a rotated
///   certificate, a changed password) is reported once and retried, as an outage is.
/// - Crash-safe: a sync records what it is about to make both sides hold before its first
///   write, so a sync killed between its writes is finished by the next run's merge, and no
///   value it had written counts as the other side's change (``MirrorMerge/init(interrupted:file:key:)``).
///
/// The sync logic works on two ``SharedDocument``s of any store, the file side and the key
/// side, and keeps the pair's record and its conflict copies behind two seams
/// (``MirrorRecordStore``, ``MirrorConflictCopies``): ``init(filePath:location:preference:logger:schema:assertFormats:check:status:)``
/// builds the file and etcd ones of `ccsync mirror`; the tests build them in memory.
package final class DocumentMirror: Sendable {
  /// Which side wins when both exist, differ and have no common history.
  package enum Preference: Sendable {
    case key
    case file
  }

  private struct State {
    var followers: [DocumentFollower] = []
    /// The key's version its follower took from the news of its watch, and the rank it was
    /// recorded under: the next sync takes it instead of ranging the key again, while no
    /// later version of the key was recorded.
    var keyNews: (value: JSONValue, rank: VersionTracking.Rank?)?
    /// Whether the last sync ended in sync and the key's follower has reported nothing but
    /// new versions since: the version of the key this process last read or wrote (its
    /// watch's news included) is then the one the next sync takes, without a range. A stale
    /// one costs nothing but time: a write to the key compares, and the news of the newer
    /// version starts another sync.
    var keySeenIsCurrent = false
    /// Whether a follower refused a version since the last one adopted (a version another
    /// writer put, or the version kept, judged again after its schema changed): a sync that
    /// finds both sides in sync judges what they hold again, and reports it when refused.
    var refusalSeen = false
    /// The mirror's hold on the pair (``MirrorRecordStore/claim()``) while it runs.
    var claim: (any MirrorPairClaim)?
    /// Whether the first sync has been tried (then `firstSync` has been called).
    var triedOnce = false
    var firstSync: (@Sendable () -> Void)?
    /// Called instead of retrying when the cluster refuses the mirror before it was ever in
    /// sync; `nil` once called, or when the caller asked to retry refusals too.
    var refusedAtStart: (@Sendable (StorageError) -> Void)?
    /// Whether a sync has completed since ``start(firstSync:refusedAtStart:)``.
    var wasInSync = false
    /// What identifies the problem last reported for the pair (an outage, an invalid or
    /// refused version), so that each is said once.
    var reported: Problem.Key?
    /// When a sync first found the mirrored file missing (and left it so); `nil` while it exists.
    var fileMissingSince: ContinuousClock.Instant?
    /// The problem of the file's version its follower last reported `.invalid`, once that
    /// version had stayed invalid for its grace (``FollowGrace``), until the file's next valid
    /// or missing version: a sync that finds the file invalid reports only this problem, so
    /// a file being written in place is reported by the followers' one grace, never by a
    /// timer of the mirror's.
    var fileInvalidAfterGrace: String?
    var retryScheduled = false
    /// The versions of the file and of the key the last sync read, as it read them: what
    /// names a version it found refused (see ``Problem/versions``), whatever a follower has
    /// recorded since.
    var versionsRead: [VersionIdentity?] = []
    var stopped = false
  }

  /// The local file, as given (the file side's name).
  package let filePath: String
  /// What messages call the key: its `etcd://` URL (the key side's name).
  package let keyName: String
  private let file: SharedDocument
  private let key: SharedDocument
  private let history: any MirrorRecordStore
  private let conflictCopies: any MirrorConflictCopies
  private let preference: Preference
  private let logger: DiagnosticLog
  /// The host's reports of its status under the key (`KEY.ccsync-status/HOST`), when on.
  private let status: FleetStatusReporter?
  private let syncs = ReloadQueue()
  private let state = Protected(State())
  /// How long to wait before trying a cluster that did not answer again.
  static let retryDelay: Duration = .seconds(1)
  /// A mirror of `filePath` and `location`; nothing happens until ``start(firstSync:)``.
  /// - Parameters:
  ///   - check: a check every version must pass before it is written to either side (the
  ///     key's schema, named by `$schema` beside the key, applies on both sides too).
  ///   - schema: a schema to apply instead of the one `$schema` names.
  ///   - status: reports which version this host holds under this name (see
  ///     ``FleetStatusReporter``); `nil` reports nothing.
  package convenience init(
    filePath: String, location: EtcdLocation, preference: Preference = .key, logger: DiagnosticLog = .standardError,
    schema: DocumentGate.SchemaSource? = nil, assertFormats: Bool = false, check: DocumentGate.Check? = nil,
    status: FleetStatusReporter? = nil
  ) {
    let sharedFile = SharedFile(path: filePath, logger: logger)
    let file = SharedDocument(
      file: sharedFile, gate: DocumentGate(schema: schema ?? .fromDocumentBeside(location), assertFormats: assertFormats, check: check))
    // The mirror says itself when the cluster cannot be reached, and when it answers again:
    // the key's watch keeps its warnings about the same outage to itself.
    let key = SharedDocument(
      etcd: location, logger: DiagnosticLog(minimumLevel: .error) { level, message in logger.log(level, message) },
      gate: DocumentGate(schema: schema ?? .fromDocument, assertFormats: assertFormats, check: check))
    // Beside the file a symlink leads to, as its lock file is: a second mirror of the same
    // file is refused however it is named. A link that leads nowhere fails every sync anyway.
    let history = MirrorHistory(filePath: (try? sharedFile.resolvedPath()) ?? filePath, key: location.key)
    self.init(
      file: file, key: key, history: history, conflictCopies: SideBySideConflictCopies(file: sharedFile, location: location),
      preference: preference, logger: logger, status: status)
  }

  /// A mirror of two documents of any store: `file` is the file side (its follower's grace
  /// judges it, and it is recreated only once it has stayed missing, when its store may show
  /// a write part done), `key` the key side (it wins a field both changed, and its follower
  /// follows the schema). `history` keeps the pair's record and claims the pair;
  /// `conflictCopies` keeps the version a first meeting replaces. Each document's gate is
  /// what a version must pass to be written to it or taken from it.
  init(
    file: SharedDocument, key: SharedDocument, history: any MirrorRecordStore, conflictCopies: any MirrorConflictCopies,
    preference: Preference = .key, logger: DiagnosticLog = .standardError, status: FleetStatusReporter? = nil
  ) {
    self.status = status
    filePath = file.name
    keyName = key.name
    self.file = file
    self.key = key
    self.history = history
    self.conflictCopies = conflictCopies
    self.preference = preference
    self.logger = logger
  }

  /// Claims the pair (a second mirror of the same file is refused), starts watching both
  /// sides and runs the first sync; `firstSync` is called once that sync has been tried
  /// (done, or failed: the cluster found unreachable, a side invalid; the file is served
  /// either way, and the sync is tried again every second).
  /// - Parameter refusedAtStart: when given, called (once, instead of `firstSync` if that
  ///   was not called yet) when the cluster refuses the mirror
  ///   (``StoreError/accessDenied(_:)``: credentials, permission, TLS) before any sync has
  ///   completed; the mirror then stops retrying. When `nil`, a refusal is retried as any
  ///   failure is.
  /// - Throws: ``StoreError/lockUnavailable(path:)`` when another mirror runs for the file.
  package func start(
    firstSync: @escaping @Sendable () -> Void, refusedAtStart: (@Sendable (StorageError) -> Void)? = nil
  ) throws(StoreError) {
    let claim = try history.claim()
    do {
      try status?.claim()
    } catch {
      claim.release()
      throw error
    }
    state.withLock { state in
      state.claim = claim
      state.firstSync = firstSync
      state.refusedAtStart = refusedAtStart
    }
    // The key's schema judges both sides: its follower alone follows it, so a schema
    // change is reported once.
    let followers = [
      file.follow(followsSchema: false) { [weak self] event in self?.followed(event, onKey: false) },
      key.follow { [weak self] event in self?.followed(event, onKey: true) },
    ]
    state.withLock { $0.followers = followers }
    scheduleSync(ChangeHint(contentMayDiffer: true, isRequestedRecheck: false, description: "start"))
  }

  /// What a side's follower found: anything new starts a sync; the key's new version is kept
  /// for it, so it need not range the key again.
  private func followed(_ event: DocumentFollower.Event, onKey: Bool) {
    if onKey {
      // Anything but a new version (a refusal, a schema change, a key invalid or missing):
      // the next sync reads the key.
      if case .changed = event {} else { state.withLock { $0.keySeenIsCurrent = false } }
    }
    let reason: String
    switch event {
    case .changed(let value, let rank, _):
      state.withLock { state in
        state.refusalSeen = false
        if onKey { state.keyNews = (value, rank) } else { state.fileInvalidAfterGrace = nil }
      }
      reason = onKey ? "the key changed" : "the file changed"
    case .rejected:
      state.withLock { $0.refusalSeen = true }
      reason = "a version refused"
    case .schemaChanged:
      reason = "the schema changed"  // a version held back as refused may pass now
    case .invalid(let error) where !onKey:
      state.withLock { $0.fileInvalidAfterGrace = error.description }
      reason = "the file's watch"
    case .missing where !onKey:
      state.withLock { $0.fileInvalidAfterGrace = nil }
      reason = "the file's watch"
    case .missing, .invalid, .refused:
      reason = onKey ? "the key's watch" : "the file's watch"
    }
    scheduleSync(ChangeHint(contentMayDiffer: true, isRequestedRecheck: false, description: reason))
  }

  /// Stops watching and releases the pair. A sync under way is not waited for: the process
  /// may end in the middle of it, which the next run finishes as it would after a crash.
  package func stop() {
    let (followers, claim) = state.withLock { state in
      state.stopped = true
      defer {
        state.followers = []
        state.claim = nil
      }
      return (state.followers, state.claim)
    }
    for follower in followers { follower.stop() }
    claim?.release()
    status?.stop()
  }

  private func scheduleSync(_ hint: ChangeHint) {
    syncs.schedule(hint) { [weak self] _ in self?.sync() }
  }

  /// One sync: read both sides, merge, write, record. Errors are reported, never thrown.
  private func sync() {
    guard !state.withLock({ $0.stopped }) else { return }
    let outcome: Outcome
    do {
      outcome = try syncOnce()
    } catch {
      outcome = .failed(error)
    }
    if case .done = outcome, state.withLock({ $0.refusalSeen }) {
      // In sync, on a version its schema may refuse now: said once, kept, judged again at
      // the next change of a side or of the schema until a version passes (a schema
      // loosened again passes the same version).
      if case .refused(let refused) = key.judgeSeenVersionAgain() {
        settle(.failed(refused))
        return
      }
      state.withLock { $0.refusalSeen = false }
    }
    switch outcome {
    case .raced:
      state.withLock { $0.keySeenIsCurrent = false }  // the next sync reads both sides
      scheduleSync(ChangeHint(contentMayDiffer: true, isRequestedRecheck: false, description: "raced"))
    case .fileMissing(let remaining):
      state.withLock { $0.keySeenIsCurrent = false }
      scheduleSync(after: remaining)
    case .done, .failed:
      settle(outcome)
    }
  }

  /// How a sync ended.
  private enum Outcome {
    /// In sync (or nothing to do).
    case done
    /// A side appeared or disappeared between the sync's read and its write: sync again now.
    case raced
    /// The file disappeared less than ``FollowGrace/missing`` ago: look again
    /// when the rest of it has passed.
    case fileMissing(remaining: Duration)
    /// A side is not valid JSON, or the cluster could not be reached: report, retry later.
    case failed(StorageError)
  }

  /// One sync. Every sync that writes records what it is doing first (``MirrorHistory``): the
  /// version it makes both sides hold and what it read from each; then the key gets its
  /// changes by compare-and-swap, the file its changes under the lock, and the result is
  /// recorded as agreed. Killed anywhere in between, the next sync finds that record and
  /// merges as if the interrupted one had finished (``MirrorMerge/init(interrupted:file:key:)``).
  private func syncOnce() throws(StorageError) -> Outcome {
    let (fileValue, _, fileVersion) = try file.readTracked()
    if fileValue != nil { state.withLock { $0.fileMissingSince = nil } }
    let keyValue: JSONValue?
    let keyVersion: VersionIdentity?
    if let news = keyNews() {
      keyValue = news
      keyVersion = key.lastSeenIdentity  // the news is of the version recorded last
    } else if state.withLock({ $0.keySeenIsCurrent }), let seen = key.latestSeenDocument() {
      // In sync since, and the key's news tells each new version: no range.
      (keyValue, keyVersion) = (seen.value, seen.identity)
    } else {
      (keyValue, _, keyVersion) = try key.readTracked()
    }
    state.withLock { $0.versionsRead = [fileVersion, keyVersion] }
    let history = try self.history.load()
    let merged: JSONValue
    switch (fileValue, keyValue) {
    case (nil, nil):
      return .done
    case (let fileValue?, nil):
      merged = fileValue
    case (nil, let keyValue?):
      // A file that was mirrored and is gone may be mid-save: created again once it has
      // stayed missing for a moment (a first run copies the key at once). A file side whose
      // store shows only whole versions (``PartialWrite/impossible``) is never mid-save.
      if history != nil, file.partialWrite() != .impossible {
        let now = ContinuousClock.now
        let since = state.withLock { state in
          if state.fileMissingSince == nil { state.fileMissingSince = now }
          return state.fileMissingSince ?? now
        }
        let remaining = FollowGrace.missing - (now - since)
        guard remaining <= .zero else { return .fileMissing(remaining: remaining) }
        state.withLock { $0.fileMissingSince = nil }
      }
      merged = keyValue
    case (let fileValue?, let keyValue?):
      if let history {
        let merge: MirrorMerge
        if let pending = history.pending {
          merge = MirrorMerge(interrupted: pending, file: fileValue, key: keyValue)
        } else {
          merge = MirrorMerge(agreed: history.agreed ?? keyValue, file: fileValue, key: keyValue)
        }
        for conflict in merge.conflicts {
          let lost = conflict.lostValue.map { $0.formatted(.compact) } ?? "(removed)"
          logger.log(.warning, "mirror '\(filePath)': '\(conflict.path)' changed on both sides; the key's value kept, the file's \(lost) lost")
        }
        merged = merge.merged
      } else if fileValue == keyValue {
        merged = keyValue
      } else {
        merged = try firstMeeting(file: fileValue, key: keyValue)
      }
    }
    if fileValue == merged && keyValue == merged {
      if history != MirrorHistory.Record(agreed: merged) { try self.history.save(MirrorHistory.Record(agreed: merged)) }
      followSchema(of: merged)
      return .done
    }
    let before = history ?? MirrorHistory.Record()
    try self.history.save(MirrorHistory.Record(
      agreed: before.agreed, pending: MirrorHistory.Pending(merged: merged, file: fileValue, key: keyValue)))
    let keyWrite: SideWrite
    let fileWrite: SideWrite
    do {
      keyWrite = try write(key, read: keyValue, to: merged)
      fileWrite = keyWrite == .raced ? .raced : try write(file, read: fileValue, to: merged)
    } catch {
      // A version the gate refused is not a crash to finish later: the record goes back to
      // the agreed version, and the refusal is reported (once per version) and judged again
      // when something changes: a version of either side, or the schema, which the key's
      // follower follows from now on.
      if case .rejected = error {
        try self.history.save(before)
        followSchema(of: merged)
      }
      throw error
    }
    guard fileWrite != .raced else {
      // Nothing written: the record goes back to what it was, so the next sync merges from
      // the agreed version, not from this sync's plan.
      if keyWrite == .unchanged || keyWrite == .raced { try self.history.save(before) }
      return .raced
    }
    try self.history.save(MirrorHistory.Record(agreed: merged))
    // A side that held a change this sync had not read (a compare-and-swap that lost and
    // planned again over another host's write) holds more than the other now; that write's
    // news came before this process's and is stale: sync again, reading both sides.
    if keyWrite == .writtenOverNewer || fileWrite == .writtenOverNewer { return .raced }
    followSchema(of: merged)
    return .done
  }

  /// Has the key's follower follow the schema of `agreed`, the version both sides hold.
  private func followSchema(of agreed: JSONValue) {
    state.withLock { $0.followers.last }?.followSchema(of: agreed)
  }

  /// The key's version its watch's news carried, when nothing of the key was recorded since
  /// (no sync read or wrote it): what a range would return, without the range. Taken once.
  private func keyNews() -> JSONValue?? {
    guard let news = state.withLock({ state in
      defer { state.keyNews = nil }
      return state.keyNews
    }), let rank = news.rank, key.isLatestRecorded(rank) else { return nil }
    return .some(news.value)
  }

  /// Both sides exist, differ, and have no common history: the preferred side's version is
  /// the result; the other's is kept beside it first.
  private func firstMeeting(file fileValue: JSONValue, key keyValue: JSONValue) throws(StorageError) -> JSONValue {
    switch preference {
    case .key:
      let copy = try conflictCopies.keepFileVersion(SharedDocument.documentBytes(fileValue))
      logger.log(.warning, "mirror '\(filePath)': the file differed from the key; the key's version taken, the file's kept as '\(copy)'")
      return keyValue
    case .file:
      let copy = try conflictCopies.keepKeyVersion(SharedDocument.documentBytes(keyValue))
      logger.log(.warning, "mirror '\(filePath)': the key differed from the file; the file's version taken, the key's kept as '\(copy)'")
      return fileValue
    }
  }

  /// What ``write(_:read:to:)`` did.
  private enum SideWrite: Equatable {
    /// The side already held the result.
    case unchanged
    case written
    /// Written, over a version that held changes the sync had not read: the side now holds
    /// more than the result.
    case writtenOverNewer
    /// The side appeared or disappeared since the sync read it; nothing written.
    case raced
  }

  /// Makes `document` (the file or the key), which held `read` when the sync read it, hold
  /// `target`: the changes from `read` to `target` are applied to what it holds now (under
  /// the file's lock, or by compare-and-swap), so another writer's change since survives.
  /// A side that was missing is created only if it still is, and a side that exists is never
  /// created anew from part of a document: either race is ``SideWrite/raced``, and the sync
  /// starts again from a new read.
  private func write(_ document: SharedDocument, read: JSONValue?, to target: JSONValue) throws(StorageError) -> SideWrite {
    guard read != target else { return .unchanged }
    let changes = read.map { JSONChangeSet(from: $0, to: target) }
    var raced = false
    var overNewer = false
    do {
      // The version the sync read (or wrote, or heard of since) is presumed current: a key's
      // write sends its compare-and-swap without a range first.
      let written = try document.updateTracked(
        invalidFile: .fail, missingFile: read == nil ? .create : .fail, presumingLatestSeen: true
      ) { current, held in
        if let changes {
          overNewer = current != read  // the last run's (a lost swap runs it again)
          current = changes.applied(to: current)
        } else if held {
          raced = true  // created meanwhile: merge with it instead
        } else {
          current = target
        }
      }
      if let notDurable = written.notDurable { throw notDurable }
    } catch StorageError.missingFile {
      return .raced  // deleted meanwhile: recreate it whole instead
    } catch let error as StorageError {
      throw error
    } catch {
      throw .encodingFailed(path: document.name, message: "\(error)")
    }
    return raced ? .raced : overNewer ? .writtenOverNewer : .written
  }

  /// Reports what a sync found (once per problem; an invalid file only once its follower has
  /// found it still invalid after the grace, see ``State/fileInvalidAfterGrace``), schedules
  /// a retry after a failure, and calls `firstSync` after the first.
  private func settle(_ outcome: Outcome) {
    if case .failed(let error) = outcome, case .store(.accessDenied) = error {
      let refused = state.withLock { state -> (@Sendable (StorageError) -> Void)? in
        guard !state.wasInSync, let refused = state.refusedAtStart else { return nil }
        state.refusedAtStart = nil
        state.firstSync = nil
        state.stopped = true  // no retry: the caller ends the mirror
        return refused
      }
      if let refused {
        refused(error)
        return
      }
    }
    state.withLock { state in
      if case .done = outcome {
        state.wasInSync = true
        state.keySeenIsCurrent = true
      } else {
        state.keySeenIsCurrent = false
      }
    }
    let problem: Problem?
    switch outcome {
    case .done, .raced, .fileMissing: problem = nil
    case .failed(let error): problem = describe(error)
    }
    let (report, recovered, firstSync, retry, unconfirmed) = state.withLock { state in
      var report: String?
      var retry: Duration?
      var unconfirmed = false
      if let problem, problem.key != state.reported {
        // A file that may be mid-write is the file follower's to judge by the one grace: it
        // is reported once the follower has reported this very problem.
        if !problem.waitsForTheGrace || state.fileInvalidAfterGrace == problem.identity {
          report = problem.message
        } else {
          unconfirmed = true
        }
      }
      let recovered = problem == nil && state.reported != nil
      if problem == nil || report != nil { state.reported = problem?.key }
      let firstSync = state.triedOnce ? nil : state.firstSync
      state.triedOnce = true
      state.firstSync = nil
      if let problem, problem.isRetried, !state.retryScheduled {
        state.retryScheduled = true
        retry = DocumentMirror.retryDelay
      }
      return (report, recovered, firstSync, state.stopped ? nil : retry, unconfirmed && !state.stopped)
    }
    if unconfirmed {
      // The follower may not have looked at this version (a sync started by the key, by a
      // retry, or at the start): it looks now, and reports it after the grace if it stays so.
      state.withLock { $0.followers.first }?.lookAgain("the mirror's sync found the file invalid")
    }
    if let report { logger.log(.error, "mirror '\(filePath)': \(report)") }
    reportStatus(outcome)
    if recovered { logger.log(.warning, "mirror '\(filePath)' <-> '\(keyName)': in sync again") }
    firstSync?()
    if let retry { scheduleSync(after: retry, clearsRetry: true) }
  }

  /// Tells the fleet which version of the key this host holds, or refused.
  private func reportStatus(_ outcome: Outcome) {
    guard let status else { return }
    switch outcome {
    case .done:
      // The revision the sync read or wrote: the key holds it (or a later one, whose news
      // brings the next sync) without a range to ask.
      if let revision = key.lastSeenRevision ?? status.keyRevision(of: status.location) { status.report(.applied, revision: revision) }
    case .failed(let error):
      guard case .rejected = error, let revision = status.keyRevision(of: status.location) else { return }
      status.report(.rejected, revision: revision, reason: error.description)
    case .raced, .fileMissing:
      return
    }
  }

  /// Schedules a sync `delay` from now; `clearsRetry`: it is the regular retry after a failure.
  private func scheduleSync(after delay: Duration, clearsRetry: Bool = false) {
    DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(delay.nanoseconds))) { [weak self] in
      guard let self else { return }
      if clearsRetry { state.withLock { $0.retryScheduled = false } }
      scheduleSync(ChangeHint(contentMayDiffer: true, isRequestedRecheck: false, description: "retry"))
    }
  }

  /// A failed sync's problem, as reported.
  struct Problem {
    /// What identifies a problem, so that it is said once: an outage is one problem however
    /// each attempt fails (refused, timed out, another member); an invalid or refused version
    /// is one per message and versions the sides held.
    struct Key: Equatable {
      var identity: String
      var versions: [VersionIdentity?]
    }

    /// What identifies it apart from the versions (see ``Key``).
    var identity: String
    var message: String
    /// Whether it is the file's invalid version, perhaps caught in the middle of an in-place
    /// write: reported only once the file's follower has reported it after the grace.
    var waitsForTheGrace = false
    /// What names the version a problem is about: for a refusal, the versions of the file
    /// and of the key the failing sync read (the candidate it refused is made of both); for
    /// an invalid side, that side's version. Another version is another problem, said again.
    var versions: [VersionIdentity?] = []
    /// Whether the sync is tried again every second until it passes. Not for a refusal by
    /// the schema alone: its verdict changes only with a version of either side or the
    /// schema, whose followers start a sync. A check's verdict may depend on more (what it
    /// asks, a time-out on a loaded machine): retried.
    var isRetried = true

    var key: Key { Key(identity: identity, versions: versions) }
  }

  /// What a failed sync says.
  func describe(_ error: StorageError) -> Problem {
    var problem = describeProblem(error)
    switch error {
    case .rejected:
      problem.versions = state.withLock { $0.versionsRead }
      problem.isRetried = key.gate.check != nil
      if !problem.isRetried {
        problem.message = "\(error); not mirrored, the other side keeps its version until a side or the schema changes"
      }
    case .invalidJSON(let path, _), .decodingFailed(let path, _):
      // The side that holds it: the other's changes meanwhile wait, and are no news of it.
      problem.versions = [path == file.name ? file.lastSeenIdentity : key.lastSeenIdentity]
    default:
      break
    }
    return problem
  }

  /// What a failed sync says, apart from the versions it read (see ``describe(_:)``).
  private func describeProblem(_ error: StorageError) -> Problem {
    switch error {
    case .store(.unreachable(let detail)):
      return Problem(
        identity: "unreachable",
        message: "the cluster cannot be reached (\(detail)); the file is kept as it is, and its edits go to the key when the cluster answers")
    case .invalidJSON(let path, _):
      return Problem(
        identity: error.description,
        message: "\(error); not mirrored until it is valid, the other side keeps its last valid version",
        waitsForTheGrace: path == file.name)
    default:
      return Problem(identity: error.description, message: "\(error); trying again every second")
    }
  }
}
