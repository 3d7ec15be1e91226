import CCSyncSystem

/// A place that keeps the successive versions of one document's text: a file on this
/// machine (``FileStore``) or, beyond it, a key on a cluster. The document layer
/// (``SharedDocument``) works through this seam alone, so it never learns which one it has
/// (docs/ARCHITECTURE.md, "The store seam").
///
/// A store promises four things:
/// - a read gives one whole version with the identity it had (``read()``);
/// - a write replaces the version it was planned against and no other, exactly once
///   (``write(wait:_:)``): the file store holds the lock across the read, the plan and the
///   rename; a store that writes by compare-and-swap plans again against the newer version
///   when the swap loses, so a plan may be made more than once and must start over each time;
/// - invalid bytes are kept aside before a write replaces them (``WritePlan/replace(with:keepsInvalidCopy:)``);
/// - it says when the document may have changed (``watch(_:)``), whoever changed it.
///
/// Conforming types are `Sendable` and safe to use from any thread.
package protocol DocumentStore: Sendable {
  /// What messages name: the file's path as given.
  var name: String { get }

  /// Reads the current version, or `nil` when there is none (no such file).
  func read() throws(StoreError) -> StoredVersion?

  /// Whether a check cheaper than a read proves that the store still holds the version
  /// identified by `identity` (as the store gave it, with a read or a write: whatever the
  /// store needs to judge it travels in it). `false` means only a read can tell: the check
  /// says it changed, or cannot vouch for it.
  func provesUnchanged(_ identity: VersionIdentity) throws(StoreError) -> Bool

  /// Writes one new version against the current one: reads it, asks `writer` for a plan,
  /// and carries the plan out, telling `writer` around the moment the new version becomes
  /// visible. See ``StoreWriter`` for the order of the calls.
  /// - Throws: what the store reports (``StoreError``), or what `writer` throws (nothing is
  ///   written then).
  func write(wait: ContentionWait, _ writer: some StoreWriter) throws

  /// Starts telling `handler` each time the document may have changed; the handler is called
  /// on a thread of the store's and must return quickly.
  func watch(_ handler: @escaping @Sendable (ChangeHint) -> Void) -> any StoreWatch

  /// Whether a write may block its thread waiting for another writer to finish (a file's
  /// lock), a wait that a ``ContentionWait`` bounds and that may be cut into slices. A store
  /// that writes by compare-and-swap (a key) never waits for another writer (it plans again
  /// when its swap loses): there a wait bounds its calls as a whole instead.
  var writesWaitForOtherWriters: Bool { get }

  /// The store of the document named `relativePath` beside this one (a schema its `$schema`
  /// names): a file in the same directory for a file, the key of that name beside the key
  /// for a key. `nil` when this store cannot name neighbours.
  func sibling(at relativePath: String) -> (any DocumentStore)?

  /// The versions kept, newest first, the current one first, at most `limit` (all when
  /// `nil`): a file's kept versions, an etcd key's revisions not yet compacted.
  func versions(limit: Int?) throws(StoreError) -> [DocumentVersion]

  /// The bytes of the version `id`, or `nil` when it is not kept (rotated out, compacted,
  /// deleted) or never was.
  func contents(ofVersion id: String) throws(StoreError) -> [UInt8]?

  /// Sets how many versions the store keeps, where that is the store's own setting (a
  /// file's history); a cluster keeps revisions until it compacts them, and ignores it.
  func setHistoryLimit(_ count: Int) throws(StoreError)

  /// What an invalid version read just now may be: a write still under way, seen part done
  /// (``PartialWrite``). Followers and writers act on it by one policy (``FollowGrace``).
  func partialWrite() -> PartialWrite
}

/// Whether an invalid version a reader found may be a write seen part way through.
package enum PartialWrite: Sendable {
  /// The store shows only whole versions (a key, written by compare-and-swap): an invalid
  /// version is what its writer wrote, reported at once.
  case impossible
  /// A writer may write in place (a file: truncated, then written): the version is reported
  /// once it has stayed invalid for ``FollowGrace/invalid``.
  case possible
  /// It very probably is one (an empty file changed less than ``FollowGrace/empty`` ago):
  /// looked at again, neither reported nor taken for an empty document yet.
  case likely
}

/// One version of a stored document: its bytes and what identifies it. `Sendable`.
package struct StoredVersion: Sendable, Equatable {
  package var bytes: [UInt8]
  package var identity: VersionIdentity
}

/// What tells one version of a store's document from another without comparing bytes, as
/// the store defines it: the document layer only compares identities and their orders (a
/// lower ``order`` is an older version). The store puts its own description in
/// (``VersionToken``: a file's device, inode, size and times; a key's revision) and takes it
/// out again (``token(as:)``), and says where the version stands in its order of versions
/// when it has one (``order``). `Sendable`.
package struct VersionIdentity: Hashable, Sendable {
  /// The store's description of the version.
  private let token: any VersionToken
  /// Where the version stands among the store's versions, when the store orders them (an
  /// etcd key's `mod_revision`, the cluster-wide revision of the write that made it; a
  /// memory store's number): a lower order is an older version, and an order never recurs.
  /// `nil` when the store has no order (a file: equal identities very probably mean equal
  /// bytes, except within one timestamp tick).
  package let order: Int64?

  /// An identity described by `token`, at `order` when the store orders its versions.
  package init(_ token: some VersionToken, order: Int64? = nil) {
    self.token = token
    self.order = order
  }

  /// The identity of the version at `order` of a store whose order alone tells versions apart.
  package static func ordered(_ order: Int64) -> VersionIdentity {
    VersionIdentity(order, order: order)
  }

  /// The store's description, when it is a `T`.
  package func token<T: VersionToken>(as type: T.Type) -> T? {
    token as? T
  }

  package static func == (lhs: VersionIdentity, rhs: VersionIdentity) -> Bool {
    lhs.order == rhs.order && lhs.token.isEqual(to: rhs.token)
  }

  package func hash(into hasher: inout Hasher) {
    hasher.combine(order)
    token.hash(into: &hasher)
  }
}

/// What a store describes one version of its document by, inside a ``VersionIdentity``.
package protocol VersionToken: Hashable, Sendable {}

extension VersionToken {
  /// Whether `other` is a token of the same type, equal to this one.
  fileprivate func isEqual(to other: any VersionToken) -> Bool {
    (other as? Self) == self
  }
}

/// An ordered store's number for a version (``VersionIdentity/ordered(_:)``).
extension Int64: VersionToken {}

/// The document layer's side of a write (see ``DocumentStore/write(wait:_:)``). The store
/// calls, in order: ``plan(for:)``; then, when the plan replaces the document,
/// ``willPublish(_:)`` just before the new version can be seen and ``didPublish(_:)`` or
/// ``didNotPublish()`` after; when the plan leaves it, ``didLeave(_:)``; when it abandons the
/// write, nothing more. A store that writes
/// optimistically may start again at ``plan(for:)`` after ``didNotPublish()``.
///
/// The calls come on the writing thread; for the file store, all under the exclusive lock.
package protocol StoreWriter {
  /// What to do, given the version the store holds now (`nil`: none).
  /// - Throws: to write nothing; the store rethrows it.
  func plan(for current: StoredVersion?) throws -> WritePlan
  /// `bytes` are about to become the current version.
  func willPublish(_ bytes: [UInt8])
  /// The new version is in place, with `identity`.
  func didPublish(_ identity: VersionIdentity)
  /// The new version was not put in place (the write failed, or lost a compare-and-swap).
  func didNotPublish()
  /// What the store keeps with the version written, beyond its author (a rollback's origin).
  var note: WriteNote? { get }
  /// The plan left `current` in place (made durable first, in a durable store).
  func didLeave(_ current: StoredVersion?)
  /// The version the writer believes the store holds (the one it last read or wrote, its
  /// watch's news included), or `nil` to have it read. A store whose read is a round trip
  /// and whose write compares (a key) may plan the first time from it instead of reading:
  /// a stale one loses the compare, whose answer brings the version to plan again from. A
  /// plan that would leave it in place is planned again from a read, so that what is left
  /// is a version the store was seen to hold. A store that reads under its lock ignores it.
  var presumedCurrent: StoredVersion? { get }
}

extension StoreWriter {
  package var presumedCurrent: StoredVersion? { nil }
}

/// What a write does with the version it found.
package enum WritePlan {
  /// Put `bytes` in place as the new version. `keepsInvalidCopy`: the current bytes are not
  /// a valid document; keep them aside first (the file store copies them to
  /// `NAME.corrupt-TIMESTAMP` before it replaces the file).
  case replace(with: [UInt8], keepsInvalidCopy: Bool)
  /// Leave the current version in place: it is the write's result, so a durable store makes
  /// it durable first.
  case leave
  /// Nothing of this write counts (every change in it failed): release and return.
  case abandon
}

/// Why a store thinks its document may have changed. `Sendable`.
package struct ChangeHint: Sendable, CustomStringConvertible {
  /// Whether the bytes may differ although the identity does not (an in-place write within
  /// one timestamp tick), so the identity alone proves nothing.
  package var contentMayDiffer: Bool
  /// Whether this is the look asked for with ``StoreWatch/recheck(after:)``.
  package var isRequestedRecheck: Bool
  /// What happened, for diagnostics.
  package var cause: ChangeCause
  /// What the store holds now, when the news came with it (an etcd watch event carries the
  /// new value): the reload takes it instead of reading. `nil`: look.
  package var current: CurrentVersion? = nil
  /// Whether the schema that judges the document may have changed: the version kept is
  /// judged again even when the document did not change.
  package var schemaMayHaveChanged = false
  /// Set when the news is that the store refused to watch (wrong credentials, no permission
  /// to read, TLS refused) after authenticating again: no change comes until that is mended.
  /// The watch keeps trying; a subscriber that cannot go on without it (`ccsync watch`) ends.
  package var refusal: StoreError? = nil

  package var description: String { cause.description }

  /// What a store holds, as news of a change tells it.
  package enum CurrentVersion: Sendable {
    /// This version.
    case version(StoredVersion)
    /// No version: the document was deleted, or found missing, as of order `asOf` of an
    /// ordered store (an etcd revision) when known. News of a version missing as of an order
    /// below the version a process recorded is older than that version: stale.
    case missing(asOf: Int64?)

    /// The order of the version this news tells of (an etcd revision), when it has one.
    package var order: Int64? {
      switch self {
      case .version(let version): version.identity.order
      case .missing(let asOf): asOf
      }
    }
  }
}

extension ChangeHint {
  /// News of a change, with `description` saying what happened (the memberwise initialiser
  /// takes a ``ChangeCause``).
  package init(
    contentMayDiffer: Bool, isRequestedRecheck: Bool, description: String, current: CurrentVersion? = nil,
    schemaMayHaveChanged: Bool = false, refusal: StoreError? = nil
  ) {
    self.init(
      contentMayDiffer: contentMayDiffer, isRequestedRecheck: isRequestedRecheck, cause: .text(description),
      current: current, schemaMayHaveChanged: schemaMayHaveChanged, refusal: refusal)
  }
}

/// What made a store think its document changed, for diagnostics (debug logs). An etcd watch
/// event's text is made only when it is read: formatting it for every event cost more
/// instructions than the event's hand-over to its subscribers (docs/BENCHMARK-METHOD.md,
/// "Fan-out"). `Sendable`.
package enum ChangeCause: Sendable, CustomStringConvertible {
  /// Said in words.
  case text(String)
  /// An etcd watch event: a put, or a delete, at `revision`.
  case etcdEvent(isDelete: Bool, revision: Int64)

  package var description: String {
    switch self {
    case .text(let text): text
    case .etcdEvent(let isDelete, let revision): "etcd: \(isDelete ? "delete" : "put") at revision \(revision)"
    }
  }
}

/// A running ``DocumentStore/watch(_:)``; stops when cancelled or released.
package protocol StoreWatch: Sendable {
  /// Stops the watch. A call of the handler already decided on may still run.
  func cancel()
  /// Calls the handler once more after `delay` with a hint whose
  /// ``ChangeHint/isRequestedRecheck`` is set, even if nothing happened.
  func recheck(after delay: Duration)
}
