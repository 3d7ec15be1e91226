import CCSync
import CCSyncProcesses

/// `ccsync mirror [--prefer key|file] FILE etcd://[HOSTS]/KEY [FILE etcd://... ...]`: keeps
/// each local file and its key one document, both ways, until SIGTERM, SIGINT or SIGHUP
/// (exit 0). See ``DocumentMirror`` for what a sync does, docs/CLI.md for the command.
enum MirrorCommand {
  static func run(_ arguments: ParsedArguments) throws -> Int32 {
    let spec = Help.mirror
    let operands = arguments.operands
    guard operands.count % 2 == 0 else {
      throw UsageError(message: "Missing expected argument '<key>' after '\(operands[operands.count - 1])': give FILE etcd://... pairs", command: spec)
    }
    let preference: DocumentMirror.Preference
    switch arguments.value("prefer") ?? "key" {
    case "key": preference = .key
    case "file": preference = .file
    case let other: throw UsageError(message: "The value '\(other)' is invalid for '--prefer <side>': expected key or file", command: spec)
    }
    var mirrors: [DocumentMirror] = []
    var files: Set<String> = []
    for index in stride(from: 0, to: operands.count, by: 2) {
      let file = operands[index]
      let url = operands[index + 1]
      if file.hasPrefix("etcd://") {
        throw UsageError(message: "'\(file)' is not a local file: give FILE etcd://... pairs", command: spec)
      }
      guard url.hasPrefix("etcd://") else {
        throw UsageError(message: "'\(url)' is not an etcd://[HOST:PORT,...]/KEY URL", command: spec)
      }
      guard files.insert(file).inserted else {
        throw UsageError(message: "'\(file)' is named twice: a file is mirrored to one key", command: spec)
      }
      let location: EtcdLocation
      do {
        location = try EtcdLocation(url: url)
      } catch {
        throw UsageError(message: error.description, command: spec)
      }
      mirrors.append(DocumentMirror(filePath: file, location: location, preference: preference))
    }
    return try mirror(mirrors)
  }

  /// Starts every mirror, tells the service manager once each has tried its first sync, and
  /// runs until a terminating signal.
  private static func mirror(_ mirrors: [DocumentMirror]) throws -> Int32 {
    let signals = try SignalPipe.install([.interrupt, .terminate, .hangUp])
    let waiting = Protected(mirrors.count)
    let wake = try WakeUpChannel()
    defer { for mirror in mirrors { mirror.stop() } }
    for mirror in mirrors {
      do throws(StoreError) {
        try mirror.start {
          if waiting.withLock({ $0 -= 1; return $0 }) == 0 { wake.wakeUp() }
        }
      } catch {
        guard case .lockUnavailable = error else { throw error }
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
