import CCSyncJSON

/// Taking a version of the document as the value (another process's write reloaded, a load,
/// or this process's own save's result), by the rules of ``StorageState/adopt(_:decoded:coding:)``,
/// and which versions observers hear.
extension CodableStorage {
  /// Takes `json` (what the document holds now, read or just written) as the new synced
  /// version, pending edits on top. `rank` places it among the versions the document recorded
  /// (see ``SharedDocument/readIfChangedTracked(contentMayDiffer:)``); `saved`, for a save's
  /// own result, the edits the save took. Decodes outside the state's lock, decides under it.
  ///
  /// - Returns: the change observers are to hear (with `origin`, or `.external` for an
  ///   outranked save's settlement), for the caller to ``ObserverList/deliver(_:)`` once it
  ///   holds no lock; and the failure to report when the version could not be taken (the
  ///   caller reports it where it may: a save's result out of the write sequence).
  func adopt(
    _ json: JSONValue, origin: ChangeOrigin, saved: StorageState<Value>.SavedEdits?, rank: VersionTracking.Rank?,
    notify: Bool = true
  ) -> (delivery: ObserverDelivery?, failure: StorageError?) {
    let source = coding.decodingSource(json)
    let decoded = Result { () throws(StorageError) in try coding.decode(source: source) }
    let incoming = StorageState<Value>.IncomingVersion(json: json, source: source, rank: rank, saved: saved)
    // Observers are queued under the state's lock, so they hear changes in the order the
    // value took them, whichever threads made them.
    return state.withLock { state in
      switch state.adopt(incoming, decoded: decoded, coding: coding) {
      case .ignored:
        return (nil, nil)
      case .taken(let changed):
        guard changed, notify else { return (nil, nil) }
        return (observers.enqueue(value: state.value, origin: origin), nil)
      case .settledOutrankedSave(let changed):
        guard changed, notify else { return (nil, nil) }
        return (observers.enqueue(value: state.value, origin: .external), nil)
      case .unreadable(let error):
        return (nil, error)
      }
    }
  }

  /// The state's encoded value and synced version (see ``StorageState/encodings(_:)``).
  func encodings(of state: inout StorageState<Value>) throws(StorageError) -> (value: JSONValue, synced: JSONValue) {
    try state.encodings(coding)
  }
}
