/// Writes a request body for the gateway by appending bytes to one buffer, its capacity
/// reserved up front: no `JSONValue` tree is built and no base64 string made, so a put of a
/// 1 KB document costs one allocation for its body. The members written are etcd's field
/// names and enum values, which need no escaping; keys and values go as base64, int64s as
/// decimal strings, as protobuf's JSON mapping writes them (see EtcdJSON.swift).
struct EtcdRequestWriter {
  /// The body so far.
  private(set) var bytes: [UInt8] = []
  /// Whether the next member or element follows another, so needs a comma.
  private var needsComma = false

  /// A body with its top-level object opened, with room for `capacity` bytes.
  init(capacity: Int) {
    bytes.reserveCapacity(capacity)
    bytes.append(UInt8(ascii: "{"))
  }

  /// Roughly how many bytes a body carrying `byteFields` (keys and values, before base64)
  /// takes, for ``init(capacity:)``: their base64 plus room for names and numbers.
  static func capacity(for byteFields: [UInt8]...) -> Int {
    byteFields.reduce(128) { $0 + Base64.encodedCount($1.count) + 32 }
  }

  /// The finished body: the top-level object closed.
  consuming func finished() -> [UInt8] {
    bytes.append(UInt8(ascii: "}"))
    return bytes
  }

  /// Writes the member `name`'s key and colon (after a comma when needed).
  private mutating func member(_ name: StaticString) {
    if needsComma { bytes.append(UInt8(ascii: ",")) }
    bytes.append(UInt8(ascii: "\""))
    bytes.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
    bytes.append(UInt8(ascii: "\""))
    bytes.append(UInt8(ascii: ":"))
    needsComma = true
  }

  /// `"name":"<base64 of value>"`.
  mutating func base64(_ name: StaticString, _ value: [UInt8]) {
    member(name)
    bytes.append(UInt8(ascii: "\""))
    Base64.encode(value, appendingTo: &bytes)
    bytes.append(UInt8(ascii: "\""))
  }

  /// `"name":"<decimal>"`.
  mutating func int64(_ name: StaticString, _ value: Int64) {
    member(name)
    bytes.append(UInt8(ascii: "\""))
    bytes.append(contentsOf: String(value).utf8)
    bytes.append(UInt8(ascii: "\""))
  }

  /// `"name":true` or `"name":false`.
  mutating func bool(_ name: StaticString, _ value: Bool) {
    member(name)
    bytes.append(contentsOf: (value ? "true" : "false").utf8)
  }

  /// `"name":"<text>"`, for an enum value's name (`EQUAL`, `MOD`): nothing to escape.
  mutating func enumValue(_ name: StaticString, _ text: String) {
    member(name)
    bytes.append(UInt8(ascii: "\""))
    bytes.append(contentsOf: text.utf8)
    bytes.append(UInt8(ascii: "\""))
  }

  /// `"key"` and, for a range, `"range_end"`.
  mutating func keyRange(_ range: EtcdKeyRange) {
    base64("key", range.key)
    if let end = range.end { base64("range_end", end) }
  }

  /// Opens an object: member `name`, or (`nil`) the next element of an array.
  mutating func beginObject(_ name: StaticString? = nil) {
    if let name {
      member(name)
    } else if needsComma {
      bytes.append(UInt8(ascii: ","))
    }
    bytes.append(UInt8(ascii: "{"))
    needsComma = false
  }

  /// Closes the object opened last.
  mutating func endObject() {
    bytes.append(UInt8(ascii: "}"))
    needsComma = true
  }

  /// Opens an array, member `name`.
  mutating func beginArray(_ name: StaticString) {
    member(name)
    bytes.append(UInt8(ascii: "["))
    needsComma = false
  }

  /// Closes the array opened last.
  mutating func endArray() {
    bytes.append(UInt8(ascii: "]"))
    needsComma = true
  }
}
