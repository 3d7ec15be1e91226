import CCSync
import CCSyncProcesses

/// What a FILE operand names: a file, or, written `etcd://[HOST:PORT[,HOST:PORT...]]/KEY`, a
/// key of an etcd cluster (docs/CLI.md, "etcd keys"). Every command makes one from its FILE
/// operand and works on it, so each command is written once for both.
enum DocumentAddress {
  /// A file, by the path given.
  case file(String)
  /// An etcd key: the endpoints (from the URL or `$ETCDCTL_ENDPOINTS`), the key, and the
  /// credentials from `$ETCDCTL_USER`.
  case etcd(EtcdLocation)

  /// What marks an operand as an etcd key; a file whose path starts so is named `./etcd://...`.
  static let etcdScheme = "etcd://"

  /// The address `operand` names.
  /// - Throws: a ``UsageError`` (64) naming a malformed `etcd://` URL and what is wrong with it.
  init(_ operand: String, in spec: CommandSpec) throws(UsageError) {
    guard operand.hasPrefix(DocumentAddress.etcdScheme) else {
      self = .file(operand)
      return
    }
    do {
      self = .etcd(try EtcdLocation(url: operand))
    } catch {
      let reason: String
      if case .invalidLocation(_, let why) = error { reason = why } else { reason = error.description }
      throw UsageError(message: "Invalid etcd location '\(operand)': \(reason)", command: spec)
    }
  }

  /// What messages name: the path as given, or the key's URL with the endpoints it resolved to.
  var name: String {
    switch self {
    case .file(let path): return path
    case .etcd(let location): return location.description
    }
  }

  var isFile: Bool {
    if case .file = self { return true }
    return false
  }

  /// A document over the file or the key; nothing is read until asked. `watcher` tells a
  /// file's changes (`ccsync watch --poll` gives its own).
  func document(gate: DocumentGate = .standard, watcher: FileWatcher = .shared) -> SharedDocument {
    switch self {
    case .file(let path): return SharedDocument(path: path, gate: gate, watcher: watcher)
    case .etcd(let location): return SharedDocument(etcd: location, gate: gate)
    }
  }

  /// The error for a document that does not exist: a missing file, or a missing key (66 both).
  var missing: any Error {
    switch self {
    case .file(let path): return StorageError.missingFile(path: path)
    case .etcd(let location): return CommandFailure(ExitCode.noInput, "'\(location.description)': no such key")
    }
  }
}

extension ParsedArguments {
  /// The address the FILE operand (the first) names.
  /// - Throws: a ``UsageError`` for a malformed `etcd://` URL.
  func address() throws(UsageError) -> DocumentAddress {
    // `--jsonc` reaches every document of this process (and the commands it runs) as
    // CCSYNC_JSONC=1 does.
    if declares(Help.jsonc) && has(Help.jsonc) { Environment.set("CCSYNC_JSONC", to: "1") }
    return try DocumentAddress(operands[0], in: spec)
  }
}
