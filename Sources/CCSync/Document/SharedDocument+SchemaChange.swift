import CCSyncJSON

/// Judging the version last seen again, when the schema that judged it changed.
extension SharedDocument {
  /// Judges the version last seen by the gate as it is now (its schema read again).
  /// - Returns: why it no longer passes; `nil` when it passes, when none was seen, or when
  ///   it was never valid (that was reported when it was seen).
  func judgeSeenVersionAgain() -> StorageError? {
    guard let seen = tracking.withLock({ $0.seen }), seen.problem == nil else { return nil }
    let document: JSONValue
    if let kept = seen.document {
      document = kept
    } else {
      guard let parsed = try? parse(seen.bytes, after: nil) else { return nil }
      document = parsed.document
    }
    do {
      try judgeByGate(document, bytes: seen.bytes)
      return nil
    } catch {
      return error
    }
  }
}
