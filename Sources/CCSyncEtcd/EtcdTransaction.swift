import CCSyncJSON
import CCSyncSystem

/// One condition of a transaction: a field of a key compared with a value. `Sendable`.
package struct EtcdCompare: Sendable, Hashable {
  /// The field compared, with the value to compare it with.
  package enum Target: Sendable, Hashable {
    /// How many times the key was written (0 when it does not exist).
    case version(Int64)
    /// The revision that created the key (0 when it does not exist).
    case createRevision(Int64)
    /// The revision of the key's last change (0 when it does not exist).
    case modRevision(Int64)
    /// The key's value.
    case value([UInt8])
    /// The key's lease (0 for none).
    case lease(Int64)
  }

  /// How the field must relate to the value.
  package enum Relation: String, Sendable, Hashable {
    /// The field equals the value.
    case equal = "EQUAL"
    /// The field differs from the value.
    case notEqual = "NOT_EQUAL"
    /// The field is greater than the value (bytes compare lexically).
    case greater = "GREATER"
    /// The field is less than the value.
    case less = "LESS"
  }

  /// The key whose field is compared.
  package var key: [UInt8]
  /// The field and the value.
  package var target: Target
  /// The relation that must hold.
  package var relation: Relation

  /// The condition `key.target relation value`.
  package init(key: [UInt8], _ target: Target, _ relation: Relation = .equal) {
    self.key = key
    self.target = target
    self.relation = relation
  }

  /// The condition "the key was last changed at `revision`".
  package static func modRevision(of key: [UInt8], equals revision: Int64) -> EtcdCompare {
    EtcdCompare(key: key, .modRevision(revision))
  }

  /// The condition "the key does not exist" (its create revision is 0).
  package static func absent(_ key: [UInt8]) -> EtcdCompare {
    EtcdCompare(key: key, .createRevision(0))
  }

  /// Writes `{"key","target","result",<field>}` as the gateway reads a `Compare`.
  func write(into body: inout EtcdRequestWriter) {
    body.beginObject()
    body.base64("key", key)
    body.enumValue("result", relation.rawValue)
    switch target {
    case .version(let version):
      body.enumValue("target", "VERSION")
      body.int64("version", version)
    case .createRevision(let revision):
      body.enumValue("target", "CREATE")
      body.int64("create_revision", revision)
    case .modRevision(let revision):
      body.enumValue("target", "MOD")
      body.int64("mod_revision", revision)
    case .value(let value):
      body.enumValue("target", "VALUE")
      body.base64("value", value)
    case .lease(let lease):
      body.enumValue("target", "LEASE")
      body.int64("lease", lease)
    }
    body.endObject()
  }

  /// The bytes of keys and values the compare carries, for sizing a body.
  var payload: Int {
    if case .value(let value) = target { return key.count + value.count }
    return key.count
  }
}

/// One operation of a transaction branch. `Sendable`.
package enum EtcdOperation: Sendable, Hashable {
  /// Read a key or range.
  case range(EtcdKeyRange)
  /// Write `value` under `key`, attached to `lease` when not `nil`.
  case put(key: [UInt8], value: [UInt8], lease: Int64?)
  /// Delete a key or range.
  case delete(EtcdKeyRange)

  /// Whether the operation changes the store.
  var isWrite: Bool {
    if case .range = self { return false }
    return true
  }

  /// Writes `{"request_range":...}`, `{"request_put":...}` or `{"request_delete_range":...}`.
  func write(into body: inout EtcdRequestWriter) {
    body.beginObject()
    switch self {
    case .range(let range):
      body.beginObject("request_range")
      body.keyRange(range)
    case .put(let key, let value, let lease):
      body.beginObject("request_put")
      EtcdClient.writePut(key: key, value: value, lease: lease, into: &body)
    case .delete(let range):
      body.beginObject("request_delete_range")
      body.keyRange(range)
    }
    body.endObject()
    body.endObject()
  }

  /// The bytes of keys and values the operation carries, for sizing a body.
  var payload: Int {
    switch self {
    case .range(let range), .delete(let range): range.key.count + (range.end?.count ?? 0)
    case .put(let key, let value, _): key.count + value.count
    }
  }
}

/// The result of one operation of the branch that ran. `Sendable`.
package enum EtcdOperationResult: Sendable, Hashable {
  /// What a ``EtcdOperation/range(_:)`` read.
  case range(EtcdRangeResult)
  /// What a ``EtcdOperation/put(key:value:lease:)`` wrote.
  case put(EtcdPutResult)
  /// What a ``EtcdOperation/delete(_:)`` deleted.
  case delete(EtcdDeleteResult)
}

/// One element of a `TxnResponse`'s `responses`: `{"response_range":...}`,
/// `{"response_put":...}` or `{"response_delete_range":...}`.
struct EtcdScannedOperationResult: EtcdScannedObject {
  /// The result, once a member naming one was read.
  var result: EtcdOperationResult?

  mutating func read(_ key: UnsafeBufferPointer<UInt8>, from scanner: inout EtcdReplyScanner) throws(MalformedReply) {
    switch key {
    case "response_range":
      if let range = try scanner.object("response_range", of: EtcdRangeResult.self) { result = .range(range) }
    case "response_put":
      if let put = try scanner.object("response_put", of: EtcdPutResult.self) { result = .put(put) }
    case "response_delete_range":
      if let delete = try scanner.object("response_delete_range", of: EtcdDeleteResult.self) { result = .delete(delete) }
    default: try scanner.skipValue()
    }
  }
}

/// What a transaction did. `Sendable`.
package struct EtcdTransactionResult: Sendable, Hashable {
  /// Whether every compare held, so the success branch ran (else the failure branch).
  package var succeeded: Bool
  /// The store's revision after the transaction: the revision of its writes, if any.
  package var revision: Int64
  /// The results of the branch that ran, in order.
  package var results: [EtcdOperationResult]
}

/// Reads a `TxnResponse`; `succeeded` is left out when false.
extension EtcdTransactionResult: EtcdScannedObject {
  init() {
    succeeded = false
    revision = 0
    results = []
  }

  mutating func read(_ key: UnsafeBufferPointer<UInt8>, from scanner: inout EtcdReplyScanner) throws(MalformedReply) {
    switch key {
    case "succeeded": succeeded = try scanner.bool("succeeded")
    case "header": revision = try scanner.headerRevision()
    case "responses":
      results = []
      for element in try scanner.objects("responses", of: EtcdScannedOperationResult.self) {
        guard let result = element.result else {
          throw MalformedReply(detail: "a transaction response with none of response_range, response_put, response_delete_range")
        }
        results.append(result)
      }
    default: try scanner.skipValue()
    }
  }
}

extension EtcdClient {
  /// Runs a transaction (`/v3/kv/txn`): if every compare holds, the `success` operations,
  /// else the `failure` ones, atomically at one revision. A write when any operation writes:
  /// then it is not repeated once sent.
  /// - Throws: ``EtcdError/outcomeUnknown(endpoint:operation:reason:)`` for a write without
  ///   answer, ``EtcdError/requestTooLarge(endpoint:limit:message:)``, the failover errors.
  package func transaction(
    if compares: [EtcdCompare], then success: [EtcdOperation], else failure: [EtcdOperation] = [],
    deadline: Duration? = nil
  ) throws(EtcdError) -> EtcdTransactionResult {
    try runTransaction(if: compares, then: success, else: failure, deadline: deadline).result
  }

  /// Runs a transaction; see ``transaction(if:then:else:deadline:)``. Also returns the
  /// member that answered, for errors about the reply.
  func runTransaction(
    if compares: [EtcdCompare], then success: [EtcdOperation], else failure: [EtcdOperation], deadline: Duration?
  ) throws(EtcdError) -> (result: EtcdTransactionResult, endpoint: String) {
    // Base64 grows the keys and values by a third; each element adds its names.
    let payload = compares.reduce(0) { $0 + $1.payload } + success.reduce(0) { $0 + $1.payload } + failure.reduce(0) { $0 + $1.payload }
    var body = EtcdRequestWriter(capacity: 128 + payload * 4 / 3 + 128 * (compares.count + success.count + failure.count))
    body.beginArray("compare")
    for compare in compares { compare.write(into: &body) }
    body.endArray()
    body.beginArray("success")
    for operation in success { operation.write(into: &body) }
    body.endArray()
    body.beginArray("failure")
    for operation in failure { operation.write(into: &body) }
    body.endArray()
    let isWrite = success.contains(where: \.isWrite) || failure.contains(where: \.isWrite)
    let call = Call(operation: "transaction", path: "/v3/kv/txn", body: body.finished(), isWrite: isWrite, deadline: deadline)
    let (result, endpoint) = try perform(call, reading: EtcdTransactionResult.self)
    return (result, endpoint)
  }
}
