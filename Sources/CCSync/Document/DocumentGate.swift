import CCSyncSystem
import CCSyncJSON

/// What a version of a document must pass before this process writes it or adopts it: a
/// JSON Schema and a check of the caller's. The one place where a version is judged
/// (docs/ARCHITECTURE.md, "The gate"): ``SharedDocument`` asks it before every write (under
/// the file's lock, or before each compare-and-swap) and for every version another process
/// wrote before reporting it as changed, so no writer writes a refused version and no reader
/// adopts one.
///
/// The schema is, in order: the one the caller names (`--schema`, ``StorageOptions/schema``),
/// else the one the version's own top-level `"$schema"` member names by a relative path,
/// resolved beside the document (a file beside the file; for an etcd key, the key of that
/// name beside it). A `$schema` that is an `http(s)://` or other URL is an editor's and is not
/// fetched or enforced. The `$schema` member itself is metadata: it is not validated as a
/// property.
///
/// `Sendable`: the compiled schemas are cached behind a `Protected`.
public final class DocumentGate: Sendable {
  /// Where the schema comes from.
  public enum SchemaSource: Sendable {
    /// The schema the version's `$schema` member names, if any.
    case fromDocument
    /// The schema the version's `$schema` member names, resolved beside this etcd key rather
    /// than beside the document: a mirror's file enforces its key's schema, the same on every
    /// host.
    case fromDocumentBeside(EtcdLocation)
    /// A file on this machine, whatever `$schema` says.
    case file(path: String)
    /// An etcd key, whatever `$schema` says.
    case etcd(EtcdLocation)
    /// A schema given as a value; `name` is what messages call it.
    case value(JSONValue, name: String)
  }

  /// A check of the caller's: throws ``Refusal`` (or any error, whose description is the
  /// reason) to refuse the version; gets the document and the bytes that would be written or
  /// were read.
  public typealias Check = @Sendable (_ document: JSONValue, _ bytes: [UInt8]) throws -> Void

  /// Why a check refused a version, in its own words.
  public struct Refusal: Error, Sendable, CustomStringConvertible {
    public var reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { reason }
  }

  /// Where the schema comes from.
  public let schema: SchemaSource
  /// Whether `format` is asserted (see ``JSONSchema/Options/assertFormats``).
  public let assertFormats: Bool
  /// The caller's check, run after the schema passes.
  public let check: Check?
  /// Compiled schemas by their name, with the bytes they were compiled from.
  private let compiled = Protected<[String: (bytes: [UInt8], schema: JSONSchema)]>([:])

  /// A gate that checks against `schema` and then runs `check`.
  public init(schema: SchemaSource = .fromDocument, assertFormats: Bool = false, check: Check? = nil) {
    self.schema = schema
    self.assertFormats = assertFormats
    self.check = check
  }

  /// The gate every document has unless told otherwise: the schema `$schema` names, nothing
  /// else.
  public static let standard = DocumentGate()

  /// `replacement` with `current`'s top-level `$schema` member put back (first) when it has
  /// none: a write of a whole value keeps the document's schema, as every write does.
  public static func keepingSchemaMember(of current: JSONValue, in replacement: JSONValue) -> JSONValue {
    guard case .object(let old) = current, let schema = old["$schema"],
      case .object(let new) = replacement, new["$schema"] == nil
    else { return replacement }
    var kept = JSONObject()
    kept["$schema"] = schema
    for member in new { kept[member.key] = member.value }
    return .object(kept)
  }

  /// The value of the document's `$schema` member when it names a schema to enforce: a
  /// relative or absolute path, not a URL with a scheme.
  static func schemaPath(in document: JSONValue) -> String? {
    guard case .object(let object) = document, case .string(let reference)? = object["$schema"] else { return nil }
    if reference.isEmpty || reference.contains("://") || reference.hasPrefix("urn:") { return nil }
    return reference
  }

  /// Whether the gate may refuse `document`: it has a schema of its own or a check, or the
  /// document names a schema. When not, writers skip judging altogether.
  func mayApply(to document: JSONValue) -> Bool {
    if check != nil { return true }
    switch schema {
    case .fromDocument, .fromDocumentBeside: return Self.schemaPath(in: document) != nil
    default: return true
    }
  }

  /// Judges `document` (with its `bytes`) as a version of the document in `store`.
  /// - Throws: ``StorageError/rejected(path:reasons:)`` when the schema or the check refuses
  ///   it; ``StorageError/schemaUnavailable(path:schema:message:)`` when the schema cannot be
  ///   read, or ``StorageError/invalidSchema(path:schema:message:)`` when it is not one.
  func judge(_ document: JSONValue, bytes: @autoclosure () -> [UInt8], in store: any DocumentStore) throws(StorageError) {
    try judgeBySchema(document, in: store)
    try runCheck(document, bytes: bytes(), in: store)
  }

  /// Judges `document` by the schema alone (a write judges each request by it, then runs the
  /// check once on the exact text it will write).
  func judgeBySchema(_ document: JSONValue, in store: any DocumentStore) throws(StorageError) {
    if let (name, schema) = try schemaToApply(for: document, in: store) {
      var instance = document
      if case .object(var object) = instance, object["$schema"] != nil {
        object["$schema"] = nil
        instance = .object(object)
      }
      if !schema.isValid(instance) {
        let failures = schema.validate(instance)
        throw .rejected(path: store.name, reasons: failures.map { "\($0) (schema '\(name)')" })
      }
    }
  }

  /// Runs the caller's check on `document`, whose text is `bytes`.
  func runCheck(_ document: JSONValue, bytes: [UInt8], in store: any DocumentStore) throws(StorageError) {
    if let check {
      do {
        try check(document, bytes)
      } catch let refusal as Refusal {
        throw .rejected(path: store.name, reasons: [refusal.reason])
      } catch let error as StorageError {
        throw error
      } catch {
        throw .rejected(path: store.name, reasons: ["\(error)"])
      }
    }
  }

  /// The schema that applies to `document`, compiled, with the name messages give it; `nil`
  /// when none does.
  private func schemaToApply(for document: JSONValue, in store: any DocumentStore) throws(StorageError) -> (String, JSONSchema)? {
    if case .value(let value, let name) = schema {
      return (name, try compile(value, bytes: nil, name: name, documentName: store.name, resolver: nil))
    }
    guard let schemaStore = try schemaStore(for: document, in: store) else { return nil }
    return try load(schemaStore, documentName: store.name)
  }

  /// Where the schema that applies to `document` is kept; `nil` when none applies or it is
  /// given as a value.
  /// - Throws: ``StorageError/schemaUnavailable(path:schema:message:)`` for a relative
  ///   `$schema` that cannot be resolved beside the document.
  func schemaStore(for document: JSONValue, in store: any DocumentStore) throws(StorageError) -> (any DocumentStore)? {
    switch schema {
    case .value:
      return nil
    case .file(let path):
      return FileStore(file: SharedFile(path: path, durable: false, logger: .silent))
    case .etcd(let location):
      return EtcdStore(location: location, logger: .silent)
    case .fromDocument:
      guard let path = Self.schemaPath(in: document) else { return nil }
      guard let sibling = store.sibling(at: path) else {
        throw .schemaUnavailable(path: store.name, schema: path, message: "a relative '$schema' cannot be resolved beside this document")
      }
      return sibling
    case .fromDocumentBeside(let location):
      guard let path = Self.schemaPath(in: document) else { return nil }
      guard let sibling = EtcdStore(location: location, logger: .silent).sibling(at: path) else {
        throw .schemaUnavailable(path: store.name, schema: path, message: "a relative '$schema' cannot be resolved beside '\(location)'")
      }
      return sibling
    }
  }

  /// Reads the schema in `schemaStore` and compiles it, or takes the compiled one when its
  /// bytes have not changed.
  private func load(_ schemaStore: any DocumentStore, documentName: String) throws(StorageError) -> (String, JSONSchema) {
    let name = schemaStore.name
    let version: StoredVersion?
    do {
      version = try schemaStore.read()
    } catch {
      throw .schemaUnavailable(path: documentName, schema: name, message: error.description)
    }
    guard let version else {
      throw .schemaUnavailable(path: documentName, schema: name, message: "no such schema")
    }
    if let cached = compiled.withLock({ $0[name] }), cached.bytes.hasSameBytes(as: version.bytes) {
      return (name, cached.schema)
    }
    let value: JSONValue
    do {
      value = try JSONValue(parsing: version.bytes)
    } catch {
      throw .invalidSchema(path: documentName, schema: name, message: "not valid JSON: \(error)")
    }
    let resolver: (String) throws -> JSONValue? = { uri in
      // A `$ref` to another schema beside this one, by relative path: read it the same way.
      guard let relative = uri.removingPrefix(Self.localBase) else { return nil }
      guard let store = schemaStore.sibling(at: relative), let bytes = try store.read()?.bytes else { return nil }
      return try JSONValue(parsing: bytes)
    }
    let schema = try compile(value, bytes: version.bytes, name: name, documentName: documentName, resolver: resolver)
    return (name, schema)
  }

  /// The base URI schemas read from a store are compiled under: their relative `$ref`s
  /// resolve to `LOCAL-BASE/relative/path`, read beside the schema.
  static let localBase = "ccsync-local:///"

  private func compile(
    _ value: JSONValue, bytes: [UInt8]?, name: String, documentName: String, resolver: ((String) throws -> JSONValue?)?
  ) throws(StorageError) -> JSONSchema {
    let schema: JSONSchema
    do {
      schema = try JSONSchema(value, baseURI: Self.localBase + FilePath.name(of: name), options: .init(assertFormats: assertFormats), resolver: resolver)
    } catch {
      throw .invalidSchema(path: documentName, schema: name, message: error.description)
    }
    if let bytes { compiled.withLock { $0[name] = (bytes, schema) } }
    return schema
  }
}

extension String {
  /// This string without `prefix`, or `nil` when it does not start with it.
  func removingPrefix(_ prefix: String) -> String? {
    hasPrefix(prefix) ? String(dropFirst(prefix.count)) : nil
  }
}
