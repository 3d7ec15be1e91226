import CCSyncJSON
import CCSyncSystem

// The gateway speaks protobuf's JSON mapping (measured on etcd 3.4.23):
// - `bytes` fields (keys, values) are standard base64 with padding: "foo" is "Zm9v";
// - int64 fields come back as decimal strings ("revision":"8"); the gateway accepts both
//   strings and numbers in requests, and this client sends strings;
// - fields at their zero value are left out: no `kvs` when nothing matched, no `succeeded`
//   when a transaction's compare failed, no `type` on a PUT event, no `create_revision`,
//   `version` or `value` on a DELETE event's kv, no `TTL` in a keep-alive answer for a
//   lease that does not exist. A missing field therefore reads as 0, false or empty.

/// A reply that is not what the gateway sends; the client adds the endpoint. The key-value
/// and watch replies are read with ``EtcdReplyScanner``; the `JSONObject` readers below
/// serve the rarer calls (leases, locks, authentication, maintenance).
struct MalformedReply: Error {
  /// What is wrong, e.g. `"revision" is not an integer: "x"`.
  var detail: String
  /// Whether the reply is not JSON at all (truncated, a stray byte) rather than JSON of an
  /// unexpected shape: as for a reply that does not parse, the call may try another member.
  var isSyntax = false
}

extension JSONObject {
  /// An int64 field (a decimal string, or a number), 0 when absent.
  func int64(_ key: String) throws(MalformedReply) -> Int64 {
    switch self[key] {
    case nil, .null?: return 0
    case .string(let text)?:
      guard let value = Int64(text) else { throw MalformedReply(detail: "\"\(key)\" is not an integer: \"\(text)\"") }
      return value
    case .number(let number)?:
      guard let value = number.int64Value else { throw MalformedReply(detail: "\"\(key)\" is not an int64: \(number)") }
      return value
    case let other?:
      throw MalformedReply(detail: "\"\(key)\" is a \(other.kindName), not an integer")
    }
  }

  /// A bytes field decoded from base64, empty when absent.
  func bytes(_ key: String) throws(MalformedReply) -> [UInt8] {
    switch self[key] {
    case nil, .null?: return []
    case .string(let text)?:
      guard let bytes = Base64.decoded(text) else { throw MalformedReply(detail: "\"\(key)\" is not base64") }
      return bytes
    case let other?:
      throw MalformedReply(detail: "\"\(key)\" is a \(other.kindName), not a base64 string")
    }
  }

  /// A string field, empty when absent.
  func string(_ key: String) throws(MalformedReply) -> String {
    switch self[key] {
    case nil, .null?: return ""
    case .string(let value)?: return value
    case let other?: throw MalformedReply(detail: "\"\(key)\" is a \(other.kindName), not a string")
    }
  }

  /// An object field, `nil` when absent.
  func object(_ key: String) throws(MalformedReply) -> JSONObject? {
    switch self[key] {
    case nil, .null?: return nil
    case .object(let value)?: return value
    case let other?: throw MalformedReply(detail: "\"\(key)\" is a \(other.kindName), not an object")
    }
  }

  /// An array field of objects, empty when absent.
  func objects(_ key: String) throws(MalformedReply) -> [JSONObject] {
    switch self[key] {
    case nil, .null?: return []
    case .array(let elements)?:
      var objects: [JSONObject] = []
      for element in elements {
        guard case .object(let object) = element else {
          throw MalformedReply(detail: "\"\(key)\" holds a \(element.kindName), not an object")
        }
        objects.append(object)
      }
      return objects
    case let other?: throw MalformedReply(detail: "\"\(key)\" is a \(other.kindName), not an array")
    }
  }

  /// The `revision` of the reply's `header`: the store's revision when the member served it.
  func headerRevision() throws(MalformedReply) -> Int64 {
    try object("header")?.int64("revision") ?? 0
  }
}

/// Values for request bodies, in the forms the gateway reads.
enum EtcdJSON {
  /// `bytes` as a base64 JSON string.
  static func base64(_ bytes: [UInt8]) -> JSONValue {
    .string(Base64.encoded(bytes))
  }

  /// An int64 as a decimal JSON string, as protobuf's JSON mapping writes it.
  static func int64(_ value: Int64) -> JSONValue {
    .string(String(value))
  }

  /// The key just after every key that starts with `prefix`: the `range_end` that makes a
  /// range cover the prefix. `[0]` (the whole key space from the key on) when `prefix` is
  /// empty or all 0xff bytes.
  static func prefixEnd(_ prefix: [UInt8]) -> [UInt8] {
    var end = prefix
    while let last = end.last {
      if last < 0xff {
        end[end.count - 1] = last + 1
        return end
      }
      end.removeLast()
    }
    return [0]
  }
}
