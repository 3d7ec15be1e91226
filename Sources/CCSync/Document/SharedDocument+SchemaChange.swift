import CCSyncJSON

/// Judging the version last seen again, when the schema that judged it changed.
extension SharedDocument {
  /// What judging the version last seen again found.
  enum SchemaChangeVerdict {
    /// Nothing to tell: it passes as it did, none was seen, or it is not a valid document.
    case unchanged
    /// It does not pass (it passed before, or was refused and still is).
    case refused(StorageError)
    /// It was refused before and passes now: a version to take, recorded anew under `rank`.
    case passesNow(JSONValue, rank: VersionTracking.Rank)
  }

  /// Judges the version last seen by the gate as it is now (its schema read again). A version
  /// the gate refused before and passes now is recorded as valid, so its readers take it: the
  /// document holds it, and nothing else would bring it to them until the next write.
  func judgeSeenVersionAgain() -> SchemaChangeVerdict {
    guard let seen = tracking.withLock({ $0.seen }) else { return .unchanged }
    if let problem = seen.problem, !problem.isGateVerdict { return .unchanged }
    let document: JSONValue
    if let kept = seen.document {
      document = kept
    } else {
      guard let parsed = try? parse(seen.bytes, after: nil) else { return .unchanged }
      document = parsed.document
    }
    do {
      try judgeByGate(document, bytes: seen.bytes)
    } catch {
      return .refused(error)
    }
    guard seen.problem != nil, let rank = tracking.withLock({ $0.recordPassing(seen) }) else { return .unchanged }
    return .passesNow(document, rank: rank)
  }
}
