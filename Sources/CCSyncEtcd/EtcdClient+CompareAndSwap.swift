import CCSyncJSON
import CCSyncSystem

/// The state a compare-and-swap expects its key in. `Sendable`.
package enum EtcdExpectedKey: Sendable, Hashable {
  /// The key does not exist (its create revision is 0): the first write of a document.
  case absent
  /// The key was last changed at this revision (its mod revision): the version the caller
  /// read and changed.
  case modifiedAt(Int64)
}

/// How a compare-and-swap ended. `Sendable`.
package enum EtcdSwapOutcome: Sendable, Hashable {
  /// The key was as expected and now holds the new value, changed at `revision`.
  case swapped(revision: Int64)
  /// The key was not as expected. `current` is the key as it is now (`nil`: it does not
  /// exist), read in the same transaction at store revision `revision`, so the caller can
  /// merge and try again without another round trip.
  case conflict(current: EtcdKeyValue?, revision: Int64)
}

extension EtcdClient {
  /// Writes `value` under `key` only if the key is in the `expected` state, in one
  /// transaction that reads the key back when it is not.
  ///
  /// The transaction is `compare: [mod_revision(key) == M]` (or `create_revision(key) ==
  /// 0` for ``EtcdExpectedKey/absent``), `success: [put(key, value)] + alsoWrite`,
  /// `failure: [range(key)]`.
  ///
  /// Being a compare-and-swap makes an unknown outcome recoverable: after
  /// ``EtcdError/outcomeUnknown(endpoint:operation:reason:)``, read the key; if its mod
  /// revision is still the expected one the write did not happen.
  /// - Parameters:
  ///   - key: the key to write.
  ///   - expected: the state the key must be in.
  ///   - value: the new value.
  ///   - lease: attach the key to this lease.
  ///   - alsoWrite: more operations of the success branch, applied at the same revision:
  ///     keeping the bytes that failed to parse under `KEY.corrupt-REVISION`, say.
  ///   - deadline: this call's deadline instead of the configuration's.
  /// - Throws: ``EtcdError/outcomeUnknown(endpoint:operation:reason:)``,
  ///   ``EtcdError/requestTooLarge(endpoint:limit:message:)``, the failover errors.
  package func compareAndSwap(
    _ key: [UInt8], expecting expected: EtcdExpectedKey, value: [UInt8], lease: Int64? = nil,
    alsoWrite: [EtcdOperation] = [], deadline: Duration? = nil
  ) throws(EtcdError) -> EtcdSwapOutcome {
    let compare: EtcdCompare
    switch expected {
    case .absent: compare = .absent(key)
    case .modifiedAt(let revision): compare = .modRevision(of: key, equals: revision)
    }
    let (result, endpoint) = try runTransaction(
      if: [compare], then: [.put(key: key, value: value, lease: lease)] + alsoWrite, else: [.range(.key(key))],
      deadline: deadline)
    if result.succeeded { return .swapped(revision: result.revision) }
    guard case .range(let current)? = result.results.first else {
      // The failure branch is one range; anything else is not this transaction's reply.
      throw .malformedReply(endpoint: endpoint, detail: "a failed compare-and-swap without the range of its failure branch")
    }
    return .conflict(current: current.first, revision: result.revision)
  }
}
