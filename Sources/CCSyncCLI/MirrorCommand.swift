import CCSync
import CCSyncProcesses

/// `ccsync mirror [--prefer key|file] FILE etcd://[HOSTS]/KEY [FILE etcd://... ...]`: keeps
/// each local file and its key one document, both ways, until SIGTERM, SIGINT or SIGHUP
/// (exit 0). See ``DocumentMirror`` for what a sync does, docs/CLI.md for the command.
enum MirrorCommand: Command {
  static let hostName = OptionSpec(nil, "host-name", value: "name", help: "Report this host's status under <name> (default: the host's name) at KEY.ccsync-status/<name>.")
  static let statusTTL = OptionSpec(nil, "status-ttl", value: "secs", .integer(1...3600), help: "The time to live of the status report's lease: a dead mirror's host disappears within it (default 10).")
  static let prefer = OptionSpec(nil, "prefer", value: "side", .choice(["key", "file"]), help: "Which side wins at a first run when both exist and differ: key (the default) or file.")

  static let spec = CommandSpec(
    name: "mirror", overview: "Keep local JSON files and etcd keys one document each, both ways, until stopped.",
    operands: [
      OperandSpec("file", kind: .file, help: "A local JSON file (its directory must exist)."),
      OperandSpec("key", kind: .etcdURL, help: "etcd://[HOST:PORT[,HOST:PORT...]]/KEY; no hosts: $ETCDCTL_ENDPOINTS, else 127.0.0.1:2379."),
    ],
    options: [prefer, hostName, statusTTL, Help.jsonc] + GateOptions.all,
    discussion: "Every change to a file (any writer: ccsync, the library, an editor, a rename) goes into its key by compare-and-swap, and every change to the key (another host's mirror, etcdctl, the library) into the file under its lock, field by field: a field both sides changed takes the key's value, and a line on stderr names it. The last version both sides agreed on is kept in '.<name>.ccsync-mirror' beside the file, so a restart merges instead of overwriting. At a first run the preferred side wins and the other's differing version is kept (<file>.conflict-TIMESTAMP, <key>.conflict-TIMESTAMP). Deletions are not mirrored: a missing side is recreated. An invalid side is reported and not mirrored until it is valid. While the cluster cannot be reached the mirror says so once and keeps the local edits for when it answers; a cluster that refuses it (credentials, permission, TLS) before its first sync is a misconfiguration, and the mirror exits 77 saying why. Under systemd (Type=notify) readiness is signalled after the first sync. Runs until SIGTERM, SIGINT or SIGHUP (exit 0); 1 when another mirror runs for a file; 77 when the cluster refuses its first contact.",
    repeatsOperands: true)

  static func run(_ arguments: ParsedArguments) throws -> Int32 {
    let operands = arguments.operands
    guard operands.count % 2 == 0 else {
      throw arguments.usageError("Missing expected argument '<key>' after '\(operands[operands.count - 1])': give FILE etcd://... pairs")
    }
    let preference: DocumentMirror.Preference = arguments.text(prefer) == "file" ? .file : .key
    // `--jsonc` reads every file as JWCC, as it does for the other commands.
    if arguments.has(Help.jsonc) { Environment.set("CCSYNC_JSONC", to: "1") }
    var mirrors: [DocumentMirror] = []
    var files: Set<String> = []
    for index in stride(from: 0, to: operands.count, by: 2) {
      let file = operands[index]
      let url = operands[index + 1]
      if file.hasPrefix("etcd://") {
        throw arguments.usageError("'\(file)' is not a local file: give FILE etcd://... pairs")
      }
      guard url.hasPrefix("etcd://") else {
        throw arguments.usageError("'\(url)' is not an etcd://[HOST:PORT,...]/KEY URL")
      }
      guard files.insert(file).inserted else {
        throw arguments.usageError("'\(file)' is named twice: a file is mirrored to one key")
      }
      let location: EtcdLocation
      do {
        location = try EtcdLocation(url: url)
      } catch {
        throw arguments.usageError(error.description)
      }
      let gate = try GateOptions.gate(arguments, documentName: file)
      let host = arguments.text(hostName) ?? Environment.hostName
      do {
        try HostStatus.checkName(host)
      } catch {
        throw arguments.usageError("The value '\(host)' is invalid for '--host-name <name>': a host name must be non-empty and hold no '/'")
      }
      let status = try FleetStatusReporter(
        location: location, host: host, ttl: Int64(arguments.integer(statusTTL) ?? 10), logger: .standardError)
      mirrors.append(DocumentMirror(
        filePath: file, location: location, preference: preference,
        schema: arguments.has(GateOptions.schema) ? gate.schema : nil, assertFormats: gate.assertFormats, check: gate.check,
        status: status))
    }
    return try mirror(mirrors)
  }

  /// Starts every mirror, tells the service manager once each has tried its first sync, and
  /// runs until a terminating signal.
  private static func mirror(_ mirrors: [DocumentMirror]) throws -> Int32 {
    let signals = try SignalPipe.install([.interrupt, .terminate, .hangUp])
    let waiting = Protected(mirrors.count)
    let refusal = Protected<CommandFailure?>(nil)
    let wake = try WakeUpChannel()
    defer { for mirror in mirrors { mirror.stop() } }
    for mirror in mirrors {
      do throws(StoreError) {
        try mirror.start {
          if waiting.withLock({ $0 -= 1; return $0 }) == 0 { wake.wakeUp() }
        } refusedAtStart: { error in
          // Misconfigured from the start (credentials, permission, TLS): fail now with the
          // reason, as every other command does, rather than retry for ever.
          let failure = CommandFailure(
            ExitCode.permission,
            "mirror '\(mirror.filePath)' <-> '\(mirror.keyName)': the cluster refused the mirror's first contact: \(error)")
          refusal.withLock { if $0 == nil { $0 = failure } }
          wake.wakeUp()
        }
      } catch {
        guard case .lockUnavailable(let held) = error else { throw error }
        if held.contains(".ccsync-status/") {
          throw CommandFailure(ExitCode.failure, "the host name of '\(mirror.filePath)' is held by another live mirror ('\(held)'); give another --host-name")
        }
        throw CommandFailure(ExitCode.failure, "'\(mirror.filePath)' is already mirrored by another process")
      }
    }
    var notified = false
    while true {
      _ = try? waitForInput(from: [signals, wake], timeout: nil)
      if !signals.drain().isEmpty {
        try? ServiceNotification.stopping()
        return ExitCode.success
      }
      wake.drain()
      if let failure = refusal.withLock({ $0 }) { throw failure }
      if !notified && waiting.withLock({ $0 }) == 0 {
        notified = true
        do {
          try ServiceNotification.ready()
        } catch {
          StandardStreams.writeLine("ccsync: cannot tell the service manager the mirror is ready: \(error)", toStandardError: true)
        }
      }
    }
  }
}
