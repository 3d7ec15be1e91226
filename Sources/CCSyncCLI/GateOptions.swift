import CCSync
import CCSyncProcesses

/// The options of the gate every command that writes or acts on a version takes (`set`,
/// `delete`, `save`, `edit`, `watch`, `mirror`, `validate`), declared once here.
enum GateOptions {
  static let schema = OptionSpec(nil, "schema", value: "file|url", .file, help: "Check versions against this JSON Schema (a file, or an etcd:// key) instead of the one '$schema' names.")
  static let assertFormats = OptionSpec(nil, "assert-formats", help: "Make the schema's 'format' an assertion (date-time, email, ipv4, uri, uuid, ...), not only an annotation.")
  static let check = OptionSpec(nil, "check", value: "cmd", help: "Run <cmd> (sh -c) on each candidate version, its text on stdin and its path in $CCSYNC_CANDIDATE; a status other than 0 refuses it.")
  static let checkTimeout = OptionSpec(nil, "check-timeout", value: "secs", .seconds(positive: true), help: "End a check still running after <secs> (default 10) and count it as a refusal.")

  /// The gate options of a command that writes.
  static let all = [schema, assertFormats, check, checkTimeout]
  /// The default of --check-timeout.
  static let defaultCheckTimeout: Duration = .seconds(10)

  /// The gate these arguments ask for, for the document called `documentName`.
  /// - Throws: ``UsageError`` for a malformed `--schema` URL.
  static func gate(_ arguments: ParsedArguments, documentName: String) throws(UsageError) -> DocumentGate {
    let source: DocumentGate.SchemaSource
    switch arguments.text(schema) {
    case nil:
      source = .fromDocument
    case let url? where url.hasPrefix("etcd://"):
      do {
        source = .etcd(try EtcdLocation(url: url))
      } catch {
        throw arguments.usageError("The value '\(url)' is invalid for '--schema <file|url>': \(error)")
      }
    case let path?:
      source = .file(path: path)
    }
    var run: DocumentGate.Check?
    if arguments.declares(check), let command = arguments.text(check) {
      let candidateCheck = CandidateCheck(
        command: command, timeout: arguments.seconds(checkTimeout) ?? defaultCheckTimeout, documentName: documentName)
      run = { @Sendable (_: JSONValue, bytes: [UInt8]) throws in try candidateCheck.run(on: bytes) }
    }
    return DocumentGate(schema: source, assertFormats: arguments.has(assertFormats), check: run)
  }
}
