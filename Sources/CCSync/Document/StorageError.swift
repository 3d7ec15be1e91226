import CCSyncJSON

/// Everything the library's document API (``SharedDocument``, ``CodableStorage``) reports,
/// each naming the document: what its store reported, or what the document layers found in
/// the text and the value.
///
/// The CLI maps each case to a documented exit code; the library reports them to handlers and
/// throws them from `load()`, `save()`, `update {}` and `flush()`. `Sendable`.
public enum StorageError: Error, Sendable, CustomStringConvertible {
  /// Reading, locking or writing the store failed (see ``StoreError``).
  case store(StoreError)
  /// The document does not exist (reported where one is required).
  case missingFile(path: String)
  /// The stored bytes are not valid JSON.
  case invalidJSON(path: String, JSONParseError)
  /// The document is valid JSON but does not decode as the value's type.
  case decodingFailed(path: String, message: String)
  /// The value could not be encoded as JSON (a non-finite float, a throwing `encode(to:)`),
  /// or the document would be too deep for readers to accept.
  case encodingFailed(path: String, message: String)
  /// The version failed the document's gate (its schema, or a check): nothing was written,
  /// or a reader kept its last good version. Each reason names the JSON pointer, the keyword
  /// and what it expected (`/server/port: 8080.5 is not an integer (type)`), or is a check's
  /// own words.
  case rejected(path: String, reasons: [String])
  /// The schema the gate must apply cannot be read (a `$schema` naming a missing file or key).
  case schemaUnavailable(path: String, schema: String, message: String)
  /// The schema the gate must apply is not valid JSON or not a valid JSON Schema.
  case invalidSchema(path: String, schema: String, message: String)
  /// The version asked for is not kept (rotated out of a file's history, compacted by the
  /// cluster) or never was; `oldestKept` names the oldest one still there.
  case versionNotKept(path: String, id: String, oldestKept: String?)

  public var description: String {
    switch self {
    case .store(let error): return error.description
    case .missingFile(let path): return "'\(path)': no such file"
    case .invalidJSON(let path, let error): return "'\(path)' is not valid JSON: \(error)"
    case .decodingFailed(let path, let message): return "'\(path)' does not decode: \(message)"
    case .encodingFailed(let path, let message): return "cannot encode the value for '\(path)': \(message)"
    case .rejected(let path, let reasons):
      return reasons.count == 1 ? "'\(path)': \(reasons[0])" : "'\(path)' was refused:\n  " + reasons.joined(separator: "\n  ")
    case .schemaUnavailable(let path, let schema, let message): return "'\(path)': schema '\(schema)': \(message)"
    case .invalidSchema(let path, let schema, let message): return "'\(path)': schema '\(schema)' is not a valid schema: \(message)"
    case .versionNotKept(let path, let id, let oldest):
      return "'\(path)': no version '\(id)' is kept" + (oldest.map { "; the oldest kept is \($0)" } ?? "; no version is kept")
    }
  }

  /// Whether this is the gate's verdict on a valid document (refused by its schema or check,
  /// or its schema unusable), which a change of the schema may turn, rather than a document
  /// that could not be read or parsed.
  var isGateVerdict: Bool {
    switch self {
    case .rejected, .schemaUnavailable, .invalidSchema: true
    default: false
    }
  }

  /// Whether the store could not be asked (no member answered, or the cluster failed the
  /// call): a fact about the store, not about the document it holds, which stays as it was.
  var isStoreUnavailable: Bool {
    switch self {
    case .store(.unreachable), .store(.cluster): true
    default: false
    }
  }

  /// Whether the write happened but its durability is unknown (see ``StoreError/notDurable(path:_:)``).
  var isNotDurable: Bool {
    if case .store(.notDurable) = self { return true }
    return false
  }
}

/// Runs a store call, reporting its failure as ``StorageError/store(_:)``.
@inline(__always)
func storeCall<Result>(_ body: () throws(StoreError) -> Result) throws(StorageError) -> Result {
  do {
    return try body()
  } catch {
    throw .store(error)
  }
}
