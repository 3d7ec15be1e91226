import CCSyncJSON

/// A schema that changes after the value was taken: the version kept is judged once more by
/// it, and a version that no longer passes is reported and kept (docs/SEMANTICS.md, "The
/// gate").
extension CodableStorage {
  /// Watches the store of the schema that judges `json`, the version just taken, so that a
  /// change of the schema alone has that version judged again; moves the watch when a new
  /// version's `$schema` names another schema, and drops it when none applies. Only a
  /// storage that watches its document follows its schema.
  func followSchema(of json: JSONValue) {
    guard options.watchesForChanges else { return }
    let schemaStore = try? document.gate.schemaStore(for: json, in: document.store)
    guard schemaWatch.withLock({ $0?.name }) != schemaStore?.name else { return }
    let token = schemaStore?.watch { [weak self] _ in
      guard let self else { return }
      let hint = ChangeHint(contentMayDiffer: false, isRequestedRecheck: false, description: "its schema changed", schemaMayHaveChanged: true)
      reloads.schedule(hint) { [weak self] hint in self?.storeMayHaveChanged(hint) }
    }
    let replaced = schemaWatch.withLock { followed -> (any StoreWatch)? in
      let previous = followed?.watch
      followed = zip(schemaStore?.name, token).map { (name: $0, watch: $1) }
      return previous
    }
    replaced?.cancel()
  }

  /// Judges the version kept again, after its schema changed: one that no longer passes is
  /// reported once (``fileState`` becomes `.invalid` with the reason) and kept, as a version
  /// refused on arrival would be; the next version is judged as usual.
  func judgeKeptVersionAgain() {
    guard let failure = document.judgeSeenVersionAgain() else { return }
    let alreadyReported = state.withLock { state -> Bool in
      defer { state.fileState = .invalid(failure.description) }
      return state.fileState == .invalid(failure.description)
    }
    if !alreadyReported { report(failure) }
  }
}

/// Both values, or `nil` when either is missing.
private func zip<A, B>(_ a: A?, _ b: B?) -> (A, B)? {
  guard let a, let b else { return nil }
  return (a, b)
}
