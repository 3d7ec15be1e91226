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

  /// `{"key","target","result",<field>}` as the gateway reads a `Compare`.
  var json: JSONValue {
    var object = JSONObject([("key", EtcdJSON.base64(key)), ("result", .string(relation.rawValue))])
    switch target {
    case .version(let version):
      object["target"] = "VERSION"
      object["version"] = EtcdJSON.int64(version)
    case .createRevision(let revision):
      object["target"] = "CREATE"
      object["create_revision"] = EtcdJSON.int64(revision)
    case .modRevision(let revision):
      object["target"] = "MOD"
      object["mod_revision"] = EtcdJSON.int64(revision)
    case .value(let value):
      object["target"] = "VALUE"
      object["value"] = EtcdJSON.base64(value)
    case .lease(let lease):
      object["target"] = "LEASE"
      object["lease"] = EtcdJSON.int64(lease)
    }
    return .object(object)
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

  /// `{"request_range":...}`, `{"request_put":...}` or `{"request_delete_range":...}`.
  var json: JSONValue {
    switch self {
    case .range(let range):
      return ["request_range": .object(JSONObject(range.members))]
    case .put(let key, let value, let lease):
      return ["request_put": .object(EtcdClient.putRequest(key: key, value: value, lease: lease))]
    case .delete(let range):
      return ["request_delete_range": .object(JSONObject(range.members))]
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

  /// Reads `{"response_range":...}`, `{"response_put":...}` or `{"response_delete_range":...}`.
  init(json object: JSONObject) throws(MalformedReply) {
    if let range = try object.object("response_range") {
      self = .range(try EtcdRangeResult(json: range))
    } else if let put = try object.object("response_put") {
      self = .put(try EtcdPutResult(json: put))
    } else if let delete = try object.object("response_delete_range") {
      self = .delete(try EtcdDeleteResult(json: delete))
    } else {
      throw MalformedReply(detail: "a transaction response with none of response_range, response_put, response_delete_range")
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

  /// Reads a `TxnResponse`; `succeeded` is left out when false.
  init(json object: JSONObject) throws(MalformedReply) {
    succeeded = try object.bool("succeeded")
    revision = try object.headerRevision()
    results = try object.objects("responses").map { (object: JSONObject) throws(MalformedReply) in try EtcdOperationResult(json: object) }
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
    let body: JSONValue = [
      "compare": .array(compares.map(\.json)),
      "success": .array(success.map(\.json)),
      "failure": .array(failure.map(\.json)),
    ]
    let isWrite = (success + failure).contains(where: \.isWrite)
    let call = Call(operation: "transaction", path: "/v3/kv/txn", body: body, isWrite: isWrite, deadline: deadline)
    let answer = try perform(call)
    return (try answer.decode { object throws(MalformedReply) in try EtcdTransactionResult(json: object) }, answer.endpoint)
  }
}
