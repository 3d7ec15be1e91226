import CCSyncJSON
import CCSyncSystem

extension EtcdClient {
  /// Reads a key, or a range of keys (`/v3/kv/range`). A read: repeated on another member
  /// when one fails.
  /// - Parameters:
  ///   - range: one key, a prefix, or `[key, end)`.
  ///   - revision: read the store as it was at this revision; `nil` for the latest.
  ///   - limit: at most this many keys; `nil` for all.
  ///   - serializable: answer from the member's own copy without asking the leader: faster,
  ///     and possible without a quorum, but may miss the latest writes. Linearizable by
  ///     default.
  ///   - deadline: this call's deadline instead of the configuration's.
  /// - Throws: ``EtcdError/compacted(endpoint:revision:)`` for a compacted `revision`,
  ///   ``EtcdError/server(endpoint:code:message:)`` for a future one, the failover errors.
  package func range(
    _ range: EtcdKeyRange, revision: Int64? = nil, limit: Int64? = nil, serializable: Bool = false,
    deadline: Duration? = nil
  ) throws(EtcdError) -> EtcdRangeResult {
    var body = EtcdRequestWriter(capacity: EtcdRequestWriter.capacity(for: range.key, range.end ?? []))
    body.keyRange(range)
    if let revision { body.int64("revision", revision) }
    if let limit { body.int64("limit", limit) }
    if serializable { body.bool("serializable", true) }
    let call = Call(operation: "range", path: "/v3/kv/range", body: body.finished(), isWrite: false, deadline: deadline)
    return try perform(call, reading: EtcdRangeResult.self).value
  }

  /// Reads one key: its value and revisions, or `nil` when it does not exist, with the
  /// store revision of the read.
  /// - Throws: what ``range(_:revision:limit:serializable:deadline:)`` throws.
  package func get(
    _ key: [UInt8], revision: Int64? = nil, deadline: Duration? = nil
  ) throws(EtcdError) -> (keyValue: EtcdKeyValue?, revision: Int64) {
    let result = try range(.key(key), revision: revision, deadline: deadline)
    return (result.first, result.revision)
  }

  /// Writes `value` under `key` (`/v3/kv/put`). A write: not repeated once sent.
  /// - Parameters:
  ///   - lease: attach the key to this lease (it is deleted when the lease ends).
  ///   - returnPrevious: also return the key as it was before.
  ///   - deadline: this call's deadline instead of the configuration's.
  /// - Throws: ``EtcdError/requestTooLarge(endpoint:limit:message:)`` when the value is over
  ///   the server's `--max-request-bytes`, ``EtcdError/leaseNotFound(endpoint:lease:)``,
  ///   ``EtcdError/outcomeUnknown(endpoint:operation:reason:)``, the failover errors.
  @discardableResult
  package func put(
    _ key: [UInt8], value: [UInt8], lease: Int64? = nil, returnPrevious: Bool = false, deadline: Duration? = nil
  ) throws(EtcdError) -> EtcdPutResult {
    var body = EtcdRequestWriter(capacity: EtcdRequestWriter.capacity(for: key, value))
    EtcdClient.writePut(key: key, value: value, lease: lease, into: &body)
    if returnPrevious { body.bool("prev_kv", true) }
    let call = Call(operation: "put", path: "/v3/kv/put", body: body.finished(), isWrite: true, deadline: deadline, lease: lease)
    return try perform(call, reading: EtcdPutResult.self).value
  }

  /// Deletes a key, or a range of keys (`/v3/kv/deleterange`). A write: not repeated once
  /// sent. Deleting a key that does not exist succeeds with ``EtcdDeleteResult/deleted`` 0.
  /// - Parameters:
  ///   - returnPrevious: also return the deleted keys.
  ///   - deadline: this call's deadline instead of the configuration's.
  /// - Throws: ``EtcdError/outcomeUnknown(endpoint:operation:reason:)``, the failover errors.
  @discardableResult
  package func delete(
    _ range: EtcdKeyRange, returnPrevious: Bool = false, deadline: Duration? = nil
  ) throws(EtcdError) -> EtcdDeleteResult {
    var body = EtcdRequestWriter(capacity: EtcdRequestWriter.capacity(for: range.key, range.end ?? []))
    body.keyRange(range)
    if returnPrevious { body.bool("prev_kv", true) }
    let call = Call(operation: "delete", path: "/v3/kv/deleterange", body: body.finished(), isWrite: true, deadline: deadline)
    return try perform(call, reading: EtcdDeleteResult.self).value
  }

  /// Compacts the key history up to `revision` (`/v3/kv/compaction`): older revisions can
  /// no longer be read or watched from. A write.
  /// - Throws: ``EtcdError/compacted(endpoint:revision:)`` when it was compacted further
  ///   already, the failover errors.
  package func compact(upTo revision: Int64, deadline: Duration? = nil) throws(EtcdError) {
    let call = Call(
      operation: "compact", path: "/v3/kv/compaction", body: ["revision": EtcdJSON.int64(revision)],
      isWrite: true, deadline: deadline)
    _ = try perform(call)
  }

  /// Writes the members of a put: `"key","value","lease"`.
  static func writePut(key: [UInt8], value: [UInt8], lease: Int64?, into body: inout EtcdRequestWriter) {
    body.base64("key", key)
    body.base64("value", value)
    if let lease, lease != 0 { body.int64("lease", lease) }
  }
}
