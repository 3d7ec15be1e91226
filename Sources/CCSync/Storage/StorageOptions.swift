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

  public init(
    durable: Bool = true, watchesForChanges: Bool = true, flushesAtExit: Bool = true,
    encoder: JSONValueEncoder = JSONValueEncoder(), decoder: JSONValueDecoder = JSONValueDecoder(),
    logger: DiagnosticLog = .standardError, writesDefaultWhenMissing: Bool? = nil
  ) {
    self.durable = durable
    self.watchesForChanges = watchesForChanges
    self.flushesAtExit = flushesAtExit
    self.encoder = encoder
    self.decoder = decoder
    self.logger = logger
    self.writesDefaultWhenMissing = writesDefaultWhenMissing
  }
}
