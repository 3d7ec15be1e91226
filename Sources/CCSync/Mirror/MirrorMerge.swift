import CCSyncJSON

/// The three-way merge a mirror makes between a file and a key from the last version both
/// agreed on (docs/ARCHITECTURE.md, "The mirror"). Pure: no I/O, no threads.
///
/// Each side's changes since `agreed` are field-level change sets, as two processes' edits
/// are. The merged document is the file with the key's changes applied on top, so where both
/// sides changed a field to different values the key's value wins (the cluster is the shared
/// truth), and every other change of either side survives. The file then gets the changes
/// from what it holds to the merged document, the key the changes from what it holds to it:
/// each only what the other side changed.
struct MirrorMerge: Equatable {
  /// A field both sides changed to different values, and the file's value that lost.
  struct Conflict: Equatable {
    var path: JSONPath
    /// What the file held there; `nil` when the file removed it.
    var lostValue: JSONValue?
  }

  /// The document both sides hold after the merge: the next agreed version.
  var merged: JSONValue
  /// What to apply to the file's current document.
  var toFile: JSONChangeSet
  /// What to apply to the key's current document.
  var toKey: JSONChangeSet
  /// The fields where the key's change won over the file's.
  var conflicts: [Conflict]

  /// Merges `file` and `key`, both changed from `agreed`.
  init(agreed: JSONValue, file: JSONValue, key: JSONValue) {
    let local = JSONChangeSet(from: agreed, to: file)
    let remote = JSONChangeSet(from: agreed, to: key)
    merged = remote.applied(to: file)
    toFile = JSONChangeSet(from: file, to: merged)
    toKey = JSONChangeSet(from: key, to: merged)
    conflicts = local.conflicts(with: remote).map { path in
      Conflict(path: path, lostValue: try? file.value(at: path))
    }
  }

  /// Merges `file` and `key` after a sync that stopped between its writes (killed, or a
  /// write failed): `interrupted` is what it was making both sides hold and what it read from
  /// each. A side may or may not have been written, so its changes are counted from what
  /// that sync read: the side as if the sync had finished is `interrupted.merged` with those
  /// changes on top, and the two are merged from `interrupted.merged`. A value the sync wrote
  /// is then no change of the side that received it, and a side's later change to it wins as
  /// any later change does; with the agreed version as the base instead, the key's copy of a
  /// value the file changed again would count as the key's change and win (a field reverted).
  init(interrupted: MirrorHistory.Pending, file: JSONValue, key: JSONValue) {
    let base = interrupted.merged
    let fileAsIfFinished = JSONChangeSet(from: interrupted.file ?? base, to: file).applied(to: base)
    let keyAsIfFinished = JSONChangeSet(from: interrupted.key ?? base, to: key).applied(to: base)
    self.init(agreed: base, file: fileAsIfFinished, key: keyAsIfFinished)
    toFile = JSONChangeSet(from: file, to: merged)
    toKey = JSONChangeSet(from: key, to: merged)
  }
}
