import CCSyncJSON

/// How one storage turns its value into JSON and back: its coders, and its default value
/// encoded, which gives the members a document lacks where the type asks for one. Pure functions, no state: what the merge
/// rules (``StorageState``) call. `Sendable`: immutable.
///
/// A class, not a struct: the storage's code runs unspecialized, and each function that
/// copied the struct looked its metadata up at run time (three per reload); a reference is
/// copied as a pointer.
final class ValueCoding<Value: Codable>: Sendable {
  let encoder: JSONValueEncoder
  let decoder: JSONValueDecoder
  /// The default value encoded (the initial value's for `initialValue:`): the decoder's
  /// fallback for members a document lacks.
  let encodedDefault: JSONValue
  /// The document's name, for errors.
  let path: String

  init(encoder: JSONValueEncoder, decoder: JSONValueDecoder, encodedDefault: JSONValue, path: String) {
    self.encoder = encoder
    self.decoder = decoder
    self.encodedDefault = encodedDefault
    self.path = path
  }

  /// `value` encoded.
  func encode(_ value: Value) throws(StorageError) -> JSONValue {
    do {
      return try encoder.encode(value)
    } catch {
      throw .encodingFailed(path: path, message: "\(error)")
    }
  }

  /// Decodes a document; a member the type asks for and the document lacks takes the
  /// default's (see ``decode(source:)``).
  func decode(_ json: JSONValue) throws(StorageError) -> Value {
    try decode(source: decodingSource(json))
  }

  /// The JSON a value is decoded from: the document's `json` without its `$schema` member.
  func decodingSource(_ json: JSONValue) -> JSONValue {
    // `$schema` is the document's metadata, not the value's: a dictionary must not get it
    // as a key.
    if case .object(var object) = json, object["$schema"] != nil {
      object["$schema"] = nil
      return decodingSource(.object(object))
    }
    return json
  }

  /// Decodes `source` (see ``decodingSource(_:)``). Where the type asks for a member the
  /// source lacks (a struct's field, at any depth), it takes the default's member at the same
  /// path; a type that walks the keys present (a dictionary) gets exactly the source's, so an
  /// entry removed from the file stays removed whatever the default holds. Laying the whole
  /// document over the default's, as this did before, resurrected such entries.
  func decode(source: JSONValue) throws(StorageError) -> Value {
    do {
      // The usual case, a document with every member the default has, needs no fallback.
      guard ValueCoding.lacksMembers(source, of: encodedDefault) else {
        return try decoder.decode(Value.self, from: source)
      }
      return try decoder.decode(Value.self, from: source, missingMembersFrom: encodedDefault)
    } catch let error as DecodingError {
      throw .decodingFailed(path: path, message: error.readableDescription)
    } catch {
      throw .decodingFailed(path: path, message: "\(error)")
    }
  }

  /// Whether two values decoded from sources within the default's shape, and with every
  /// member it has, differ exactly when the sources do (see ``isWithinShape(_:of:)``), so that
  /// comparing sources tells a change without encoding either value. A source that lacks a
  /// member decodes as one that has the default's there, so its text alone cannot tell.
  func comparesSources(_ source: JSONValue) -> Bool {
    ValueCoding.isWithinShape(source, of: encodedDefault) && !ValueCoding.lacksMembers(source, of: encodedDefault)
  }

  /// Whether `value` lacks a member `base` has, at any depth where both are objects: whether
  /// the decoder may need `base` as its fallback.
  static func lacksMembers(_ value: JSONValue, of base: JSONValue) -> Bool {
    guard case .object(let object) = value, case .object(let baseObject) = base else { return false }
    for member in baseObject {
      guard let present = object[member.key] else { return true }
      if lacksMembers(present, of: member.value) { return true }
    }
    return false
  }

  /// Whether every member of `value`, at any depth, is one `shape` (the default value encoded:
  /// the members the type writes) has at the same place; arrays count when their elements are
  /// within the shape of `shape`'s first element, or hold no objects.
  ///
  /// Two such documents that differ decode to values that differ, since the type reads every
  /// member it writes; except where the type folds two spellings into one value (a number
  /// with more digits than a `Double` keeps, a date written two ways, an `init(from:)` that
  /// normalises), when observers may hear the same value again. A member outside the shape (a
  /// key the type does not know, an entry of a dictionary, an optional the default leaves out)
  /// may be one the type ignores, so a change there could leave the value as it was: then only
  /// the values' encodings can tell.
  static func isWithinShape(_ value: JSONValue, of shape: JSONValue) -> Bool {
    switch value {
    case .object(let object):
      guard case .object(let shapeObject) = shape else { return false }
      for member in object {
        guard let memberShape = shapeObject[member.key], isWithinShape(member.value, of: memberShape) else { return false }
      }
      return true
    case .array(let elements):
      let elementShape = shape.arrayValue?.first ?? .null
      return elements.allSatisfy { isWithinShape($0, of: elementShape) }
    case .null, .bool, .number, .string:
      return true
    }
  }
}
