
/// Where the library's diagnostics go. A library logs only when something is wrong unless
/// asked for more; each message is one line written with one `write` so lines from several
/// threads never mix. `Sendable`.
public struct DiagnosticLog: Sendable {
  /// How serious a message is.
  public enum Level: Int, Sendable, Comparable {
    case debug, warning, error
    public static func < (lhs: Level, rhs: Level) -> Bool { lhs.rawValue < rhs.rawValue }
  }

  /// Messages below this level are dropped.
  public var minimumLevel: Level
  private let sink: @Sendable (Level, String) -> Void

  /// A logger that hands each message to `sink`.
  public init(minimumLevel: Level = .warning, sink: @escaping @Sendable (Level, String) -> Void) {
    self.minimumLevel = minimumLevel
    self.sink = sink
  }

  /// Writes `ccsync: message` lines to standard error (warnings and errors only).
  public static let standardError = DiagnosticLog { _, message in
    StandardStreams.writeLine("ccsync: " + message, toStandardError: true)
  }

  /// Drops every message.
  public static let silent = DiagnosticLog(minimumLevel: .error) { _, _ in }

  /// Logs `message` at `level`.
  public func log(_ level: Level, _ message: @autoclosure () -> String) {
    guard level >= minimumLevel else { return }
    sink(level, message())
  }
}
