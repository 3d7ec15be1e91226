import CCSyncJSON

/// Where a mirror keeps the pair's record (``MirrorHistory/Record``: the last agreed version,
/// and a sync's plan while it writes) and how it claims the pair: the seam between the
/// mirror's sync logic and the place it remembers in (docs/ARCHITECTURE.md, "The mirror").
/// ``MirrorHistory`` keeps it in a file beside the mirrored file, under that file's lock, for
/// `ccsync mirror`; the tests keep one in memory.
///
/// A store promises that ``save(_:)`` is durable when it returns (a sync killed right after
/// finds it on its next run) and that ``load()`` gives what was last saved. Conforming types
/// are `Sendable`: the mirror calls them from its sync queue and from ``DocumentMirror/start(firstSync:refusedAtStart:)``.
protocol MirrorRecordStore: Sendable {
  /// The pair's record, or `nil` when there is none (a first run). A record that cannot be
  /// read is reported by throwing, never taken for none.
  func load() throws(StorageError) -> MirrorHistory.Record?

  /// Records `record` durably.
  func save(_ record: MirrorHistory.Record) throws(StorageError)

  /// Claims the pair for this mirror for as long as it runs (until the claim's ``MirrorPairClaim/release()``).
  /// - Throws: ``StoreError/lockUnavailable(path:)`` when another mirror holds it.
  func claim() throws(StoreError) -> any MirrorPairClaim
}

/// A mirror's hold on its pair (``MirrorRecordStore/claim()``), released when the mirror stops.
protocol MirrorPairClaim: AnyObject {
  /// Lets another mirror claim the pair.
  func release()
}

/// The file's record claims the pair with the exclusive lock beside it.
extension FileLock: MirrorPairClaim {}
