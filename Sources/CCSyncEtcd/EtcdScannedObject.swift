import CCSyncSystem

/// A reply, or a part of one, that reads itself member by member from an
/// ``EtcdReplyScanner``, without a `JSONValue` tree.
///
/// The gateway leaves out every field at its zero value (see EtcdJSON.swift), so a value
/// starts as ``init()``, all zero, and each member present overwrites its field; members it
/// does not know are skipped, as the `JSONObject` readers ignored them.
protocol EtcdScannedObject {
  /// The value with every member absent.
  init()
  /// Reads the value of member `key` (the scanner just after its colon) into the matching
  /// field, or skips it.
  mutating func read(_ key: UnsafeBufferPointer<UInt8>, from scanner: inout EtcdReplyScanner) throws(MalformedReply)
}

extension EtcdScannedObject {
  /// Reads one object, member `name` of its parent (for errors).
  init(scanning scanner: inout EtcdReplyScanner, _ name: StaticString) throws(MalformedReply) {
    self.init()
    try scanner.beginObject(name)
    var first = true
    while let key = try scanner.nextKey(first: first) {
      first = false
      try read(key, from: &scanner)
    }
  }

  /// Decodes a whole reply body: a unary call's reply object, or (`inStream`) one message of
  /// a stream, `{"result":{...}}` (a message without a `result` object is read as the reply
  /// itself, as ``EtcdReply`` does).
  /// - Returns: `nil` when the body has an `error` member (a string or an object): the
  ///   gateway's error, which ``EtcdReply`` reads.
  /// - Throws: ``MalformedReply`` for a body that is not JSON (``MalformedReply/isSyntax``)
  ///   or not of this reply's shape.
  static func decodeReply(_ body: [UInt8], inStream: Bool) throws(MalformedReply) -> Self? {
    let outcome = body.withUnsafeBufferPointer { bytes -> Result<Self?, MalformedReply> in
      do throws(MalformedReply) {
        switch try scanReply(bytes, unwrapping: inStream) {
        case .decoded(let value): return .success(value)
        case .serverError: return .success(nil)
        case .noResult:
          guard case .decoded(let value) = try scanReply(bytes, unwrapping: false) else { return .success(nil) }
          return .success(value)
        }
      } catch {
        return .failure(error)
      }
    }
    return try outcome.get()
  }

  /// One pass over a reply: its members read as this value's (`unwrapping` false), or only
  /// its `result` object read (`unwrapping`).
  private static func scanReply(_ bytes: UnsafeBufferPointer<UInt8>, unwrapping: Bool) throws(MalformedReply) -> ScannedReply<Self> {
    var scanner = EtcdReplyScanner(bytes)
    guard (try? scanner.peek("an object")) == UInt8(ascii: "{") else {
      let text = String(decoding: UnsafeBufferPointer(rebasing: bytes.prefix(80)), as: UTF8.self)
      throw MalformedReply(detail: "the body is not a JSON object: \(text)", isSyntax: true)
    }
    var value = Self()
    var unwrapped = false
    try scanner.beginObject("reply")
    var first = true
    while let key = try scanner.nextKey(first: first) {
      first = false
      switch key {
      case "error":
        if try scanner.isStringOrObject() {
          // The rest is still checked: a body that does not parse is malformed, error or not.
          try scanner.skipValue()
          try skipRemaining(&scanner)
          return .serverError
        }
        try scanner.skipValue()
      case "result" where unwrapping:
        if try scanner.peek("a value") == UInt8(ascii: "{") {
          value = try Self(scanning: &scanner, "result")
          unwrapped = true
        } else {
          try scanner.skipValue()
        }
      default:
        if unwrapping {
          try scanner.skipValue()
        } else {
          try value.read(key, from: &scanner)
        }
      }
    }
    try scanner.expectEnd()
    return unwrapping && !unwrapped ? .noResult : .decoded(value)
  }

  /// Skips the members left in the object being read, and checks nothing follows it.
  private static func skipRemaining(_ scanner: inout EtcdReplyScanner) throws(MalformedReply) {
    while try scanner.nextKey(first: false) != nil { try scanner.skipValue() }
    try scanner.expectEnd()
  }
}

/// What one pass over a reply found.
private enum ScannedReply<Value> {
  /// The reply's value.
  case decoded(Value)
  /// An `error` member: the gateway's error.
  case serverError
  /// No `result` object in a stream message.
  case noResult
}

extension EtcdReplyScanner {
  /// Reads an array of objects, member `name`; `null` reads as empty.
  mutating func objects<Element: EtcdScannedObject>(_ name: StaticString, of type: Element.Type) throws(MalformedReply) -> [Element] {
    guard try beginArray(name) else { return [] }
    var elements: [Element] = []
    var first = true
    while try nextElement(first: first) {
      first = false
      elements.append(try Element(scanning: &self, name))
    }
    return elements
  }

  /// Reads an object, member `name`; `nil` for `null`.
  mutating func object<Value: EtcdScannedObject>(_ name: StaticString, of type: Value.Type) throws(MalformedReply) -> Value? {
    if try skipNull() { return nil }
    return try Value(scanning: &self, name)
  }

  /// Reads the `revision` of a reply's `header` (the store's revision when the member
  /// served it); the header's other members are skipped.
  mutating func headerRevision() throws(MalformedReply) -> Int64 {
    if try skipNull() { return 0 }
    try beginObject("header")
    var revision: Int64 = 0
    var first = true
    while let key = try nextKey(first: first) {
      first = false
      if case "revision" = key { revision = try int64("revision") } else { try skipValue() }
    }
    return revision
  }
}
