import CCSyncJSON
import CCSyncSystem

/// One key with its value and revisions, as etcd stores it. `Sendable`.
package struct EtcdKeyValue: Sendable, Hashable {
  /// The key's bytes.
  package var key: [UInt8]
  /// The value's bytes (empty in a DELETE event).
  package var value: [UInt8]
  /// The revision that created the key (0 in a DELETE event).
  package var createRevision: Int64
  /// The revision of the key's last change: what a compare-and-swap compares.
  package var modRevision: Int64
  /// How many times the key was written since it was created (1 after creation).
  package var version: Int64
  /// The lease the key is attached to, 0 for none.
  package var lease: Int64

  /// A key-value with the given fields.
  package init(key: [UInt8], value: [UInt8], createRevision: Int64, modRevision: Int64, version: Int64, lease: Int64 = 0) {
    self.key = key
    self.value = value
    self.createRevision = createRevision
    self.modRevision = modRevision
    self.version = version
    self.lease = lease
  }

  /// Reads `{"key","value","create_revision","mod_revision","version","lease"}`; absent
  /// fields are zero (the gateway leaves zero values out).
  init(json object: JSONObject) throws(MalformedReply) {
    key = try object.bytes("key")
    value = try object.bytes("value")
    createRevision = try object.int64("create_revision")
    modRevision = try object.int64("mod_revision")
    version = try object.int64("version")
    lease = try object.int64("lease")
  }
}

/// What a range read returned. `Sendable`.
package struct EtcdRangeResult: Sendable, Hashable {
  /// The store's revision when the member served the read: the read sees every change up
  /// to it. Watch from `revision + 1` to see what comes after.
  package var revision: Int64
  /// The keys found, in key order.
  package var keyValues: [EtcdKeyValue]
  /// How many keys are in the range (more than `keyValues.count` when a limit cut it).
  package var count: Int64
  /// Whether a limit left keys out.
  package var more: Bool

  /// The first key found, for a one-key read.
  package var first: EtcdKeyValue? { keyValues.first }

  /// Reads a `RangeResponse`.
  init(json object: JSONObject) throws(MalformedReply) {
    revision = try object.headerRevision()
    keyValues = try object.objects("kvs").map { (object: JSONObject) throws(MalformedReply) in try EtcdKeyValue(json: object) }
    count = try object.int64("count")
    more = try object.bool("more")
  }
}

/// What a put returned. `Sendable`.
package struct EtcdPutResult: Sendable, Hashable {
  /// The revision of the put: the key's new `modRevision`.
  package var revision: Int64
  /// The key before the put, when asked for and it existed.
  package var previous: EtcdKeyValue?

  /// Reads a `PutResponse`.
  init(json object: JSONObject) throws(MalformedReply) {
    revision = try object.headerRevision()
    previous = try object.object("prev_kv").map { (object: JSONObject) throws(MalformedReply) in try EtcdKeyValue(json: object) }
  }
}

/// What a delete returned. `Sendable`.
package struct EtcdDeleteResult: Sendable, Hashable {
  /// The store's revision after the delete (unchanged when nothing was deleted).
  package var revision: Int64
  /// How many keys were deleted.
  package var deleted: Int64
  /// The deleted keys, when asked for.
  package var previous: [EtcdKeyValue]

  /// Reads a `DeleteRangeResponse`.
  init(json object: JSONObject) throws(MalformedReply) {
    revision = try object.headerRevision()
    deleted = try object.int64("deleted")
    previous = try object.objects("prev_kvs").map { (object: JSONObject) throws(MalformedReply) in try EtcdKeyValue(json: object) }
  }
}

/// A contiguous set of keys: one key, every key with a prefix, or `[key, end)`. `Sendable`.
package struct EtcdKeyRange: Sendable, Hashable {
  /// The first key.
  package var key: [UInt8]
  /// The key after the last one, or `nil` for the single key `key`.
  package var end: [UInt8]?

  /// The single key `key`.
  package static func key(_ key: [UInt8]) -> EtcdKeyRange {
    EtcdKeyRange(key: key, end: nil)
  }

  /// Every key that starts with `prefix` (every key when it is empty).
  package static func prefix(_ prefix: [UInt8]) -> EtcdKeyRange {
    EtcdKeyRange(key: prefix.isEmpty ? [0] : prefix, end: EtcdJSON.prefixEnd(prefix))
  }

  /// The keys from `key` up to, not including, `end`.
  package static func between(_ key: [UInt8], _ end: [UInt8]) -> EtcdKeyRange {
    EtcdKeyRange(key: key, end: end)
  }

  /// The `key` and `range_end` members of a request.
  var members: [(String, JSONValue)] {
    var members: [(String, JSONValue)] = [("key", EtcdJSON.base64(key))]
    if let end { members.append(("range_end", EtcdJSON.base64(end))) }
    return members
  }
}
