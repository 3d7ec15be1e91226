import CCSyncSystem
import CCSyncJSON

/// How a ``CodableStorage`` behaves beyond where and when it writes. `Sendable`.
public struct StorageOptions: Sendable {
  /// `fsync` file and directory on every write (default `true`). Relaxed writes stay atomic
  /// but may be lost on power failure.
  public var durable: Bool
  /// Reload when another process changes the file (default `true`).
  public var watchesForChanges: Bool
  /// Write pending changes at normal exit and on SIGTERM, SIGINT and SIGHUP (default `true`).
  /// The signal handlers are installed only for signals whose disposition is still the
  /// default, so an application's own handlers are left alone.
  public var flushesAtExit: Bool
  /// The Codable encoder (dates as ISO 8601, data as base64 by default).
  public var encoder: JSONValueEncoder
  /// The Codable decoder.
  public var decoder: JSONValueDecoder
  /// Where diagnostics go; stderr by default.
  public var logger: DiagnosticLog
  /// Whether a `defaultValue:` storage whose file does not exist at initialisation writes
  /// the default there at once (before the initialiser returns), so that other processes
  /// and `ccsync get` find it. `nil` (the default) leaves it to the initialiser: on for the
  /// `key:` initialisers (as WLStorage does), off for the others (as NCCCodableStorage does).
  /// An invalid file is never overwritten by it, and `initialValue:` writes its value anyway.
  public var writesDefaultWhenMissing: Bool?
  /// The JSON Schema every version must pass, written or adopted: `.fromDocument` (the
  /// default) uses the one the document's `$schema` member names, resolved beside it; a
  /// file, key or value given here is used instead (see ``DocumentGate``).
  public var schema: DocumentGate.SchemaSource
  /// Whether the schema's `format` keywords are assertions, not only annotations.
  public var assertFormats: Bool
  /// A check of your own every version must pass, after the schema: throw (a
  /// ``DocumentGate/Refusal`` with the reason, or any error) to refuse it. A save or update
  /// whose result it refuses throws ``StorageError/rejected(path:reasons:)`` and writes
  /// nothing (the local value stays pending); a version another process wrote that it
  /// refuses is not adopted: the storage keeps its last good value and reports it.
  public var validate: (@Sendable (JSONValue) throws -> Void)?

  /// The grammar of the document's text: `.jwcc` reads comments and trailing commas (and
  /// keeps them on every write); `nil` (the default) decides by the name: `.jsonc` and
  /// `.hujson` are JWCC, anything else strict JSON unless `CCSYNC_JSONC=1`.
  public var syntax: JSONSyntax?

  /// The gate these options describe.
  var gate: DocumentGate {
    let check = validate.map { validate in { @Sendable (document: JSONValue, _: [UInt8]) throws in try validate(document) } }
    return DocumentGate(schema: schema, assertFormats: assertFormats, check: check)
  }

  public init(
    durable: Bool = true, watchesForChanges: Bool = true, flushesAtExit: Bool = true,
    encoder: JSONValueEncoder = JSONValueEncoder(), decoder: JSONValueDecoder = JSONValueDecoder(),
    logger: DiagnosticLog = .standardError, writesDefaultWhenMissing: Bool? = nil,
    schema: DocumentGate.SchemaSource = .fromDocument, assertFormats: Bool = false,
    validate: (@Sendable (JSONValue) throws -> Void)? = nil, syntax: JSONSyntax? = nil
  ) {
    self.syntax = syntax
    self.schema = schema
    self.assertFormats = assertFormats
    self.validate = validate
    self.durable = durable
    self.watchesForChanges = watchesForChanges
    self.flushesAtExit = flushesAtExit
    self.encoder = encoder
    self.decoder = decoder
    self.logger = logger
    self.writesDefaultWhenMissing = writesDefaultWhenMissing
  }
}
