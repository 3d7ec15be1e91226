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
}

/// Reads `{"key","value","create_revision","mod_revision","version","lease"}`; absent
/// fields are zero (the gateway leaves zero values out).
extension EtcdKeyValue: EtcdScannedObject {
  init() {
    self.init(key: [], value: [], createRevision: 0, modRevision: 0, version: 0)
  }

  mutating func read(_ key: UnsafeBufferPointer<UInt8>, from scanner: inout EtcdReplyScanner) throws(MalformedReply) {
    switch key {
    case "key": self.key = try scanner.base64("key")
    case "value": value = try scanner.base64("value")
    case "create_revision": createRevision = try scanner.int64("create_revision")
    case "mod_revision": modRevision = try scanner.int64("mod_revision")
    case "version": version = try scanner.int64("version")
    case "lease": lease = try scanner.int64("lease")
    default: try scanner.skipValue()
    }
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
}

/// Reads a `RangeResponse`.
extension EtcdRangeResult: EtcdScannedObject {
  init() {
    revision = 0
    keyValues = []
    count = 0
    more = false
  }

  mutating func read(_ key: UnsafeBufferPointer<UInt8>, from scanner: inout EtcdReplyScanner) throws(MalformedReply) {
    switch key {
    case "header": revision = try scanner.headerRevision()
    case "kvs": keyValues = try scanner.objects("kvs", of: EtcdKeyValue.self)
    case "count": count = try scanner.int64("count")
    case "more": more = try scanner.bool("more")
    default: try scanner.skipValue()
    }
  }
}

/// What a put returned. `Sendable`.
package struct EtcdPutResult: Sendable, Hashable {
  /// The revision of the put: the key's new `modRevision`.
  package var revision: Int64
  /// The key before the put, when asked for and it existed.
  package var previous: EtcdKeyValue?
}

/// Reads a `PutResponse`.
extension EtcdPutResult: EtcdScannedObject {
  init() {
    revision = 0
    previous = nil
  }

  mutating func read(_ key: UnsafeBufferPointer<UInt8>, from scanner: inout EtcdReplyScanner) throws(MalformedReply) {
    switch key {
    case "header": revision = try scanner.headerRevision()
    case "prev_kv": previous = try scanner.object("prev_kv", of: EtcdKeyValue.self)
    default: try scanner.skipValue()
    }
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
}

/// Reads a `DeleteRangeResponse`.
extension EtcdDeleteResult: EtcdScannedObject {
  init() {
    revision = 0
    deleted = 0
    previous = []
  }

  mutating func read(_ key: UnsafeBufferPointer<UInt8>, from scanner: inout EtcdReplyScanner) throws(MalformedReply) {
    switch key {
    case "header": revision = try scanner.headerRevision()
    case "deleted": deleted = try scanner.int64("deleted")
    case "prev_kvs": previous = try scanner.objects("prev_kvs", of: EtcdKeyValue.self)
    default: try scanner.skipValue()
    }
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
}
