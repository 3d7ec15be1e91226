import CCSync
import CCSyncProcesses

/// `ccsync demo`: a tour on a temporary copy of the example document. Every command shown is
/// a real `ccsync` process, and every value shown is what it printed or what the file held.
enum DemoCommand: Command {
  static let spec = CommandSpec(
    name: "demo", overview: "A self-contained tour: processes sharing a temporary copy of an example config.",
    operands: [OperandSpec("cluster", optional: true, kind: .choice(["cluster"]), help: "Three machines sharing one document through three etcd members on loopback (needs etcd; about 15 s).")],
    options: [],
    discussion: "Without an operand: one machine, about 2 s, nothing needed. 'ccsync demo cluster' starts three etcd members, three machines (directories) each with its own mirror, watcher and writer, kills the leader, and stops everything it started; it exits 69 when etcd is not installed.")

  /// The writers of part 2: each sets a different field of `server`, all at the same moment.
  static let writers: [(path: String, value: String)] = [
    ("server.port", "9090"),
    ("server.host", "10.0.0.7"),
    ("server.tls.enabled", "true"),
    ("server.timeouts.read", "45"),
  ]

  static func run(_ arguments: ParsedArguments) throws -> Int32 {
    if let part = arguments.operands.first {
      guard part == "cluster" else {
        throw arguments.usageError("Unknown demo '\(part)': the demos are the default one and 'cluster'")
      }
      return try DemoClusterCommand.run()
    }
    let start = ContinuousClock.now
    let directory = try DemoDirectory()
    defer {
      try? ThisProcess.changeDirectory(to: "/")
      directory.remove()
    }
    try ThisProcess.changeDirectory(to: directory.path)
    let file = "config.json"
    try SharedFile(path: file).replaceContents(with: Array(DemoDocument.text.utf8))

    DemoOutput.say("ccsync demo: several processes sharing one JSON file")
    DemoOutput.say("")
    DemoOutput.say("Working in a temporary directory on a copy of the example config:")
    DemoOutput.say("  \(directory.path)/\(file)  (\(DemoDocument.text.split(separator: "\n").count) lines)")
    DemoOutput.say("Every '$ ccsync ...' line below is a separate process; what follows it is what it printed.")

    var ok = try partReading(file)
    ok = try partWatchAndWriters(file) && ok
    ok = try partLock(file) && ok
    ok = try partStress(file) && ok

    DemoOutput.say("")
    DemoOutput.say("Done in \(decimal(seconds(ContinuousClock.now - start), places: 1)) s; the temporary directory is removed.")
    return ok ? ExitCode.success : ExitCode.failure
  }

  // MARK: Parts

  private static func partReading(_ file: String) throws -> Bool {
    DemoOutput.heading("1. Reading values by path")
    var ok = true
    for arguments in [["get", file, "server.port"], ["get", "--raw", file, "servers[1].host"],
                      ["get", "--compact", file, "/features/beta"]] {
      ok = try show(arguments).status == 0 && ok
    }
    return ok
  }

  private static func partWatchAndWriters(_ file: String) throws -> Bool {
    DemoOutput.heading("2. One watcher and \(writers.count) writers at the same moment")
    let watcher = try DemoWatcher(["watch", file, "server"])
    DemoOutput.say("  watcher (pid \(watcher.child.id)): ccsync watch \(file) server")
    guard watcher.waitFor(timeout: .seconds(5), { !$0.isEmpty }) else {
      DemoOutput.say("  the watcher printed nothing within 5 s")
      _ = watcher.stop()
      return false
    }
    DemoOutput.say("  its first line:  \(watcher.lines[0].text)")
    DemoOutput.say("  \(writers.count) writers start together, each setting a different field:")
    let started = try writers.map { try DemoProcess.start(["set", file, $0.path, $0.value]) }
    let writeStart = started.map(\.startTime).min() ?? ContinuousClock.now
    // Collect the watcher's lines while the writers run, so each line's time is when it came.
    var outcomes: [DemoProcess.Outcome?] = started.map { _ in nil }
    while outcomes.contains(where: { $0 == nil }) {
      for (index, process) in started.enumerated() where outcomes[index] == nil {
        if let status = process.child.statusIfExited() { outcomes[index] = process.finished(status: status) }
      }
      watcher.waitFor(timeout: .milliseconds(2)) { _ in false }
    }
    var ok = true
    let commands = writers.map { "ccsync set \(file) \($0.path) \($0.value)" }
    let width = commands.map(\.count).max() ?? 0
    for ((command, process), outcome) in zip(zip(commands, started), outcomes.compactMap { $0 }) {
      ok = ok && outcome.status == 0
      DemoOutput.say("    pid \(process.child.id): \(pad(command, width))  exit \(outcome.status) after \(DemoOutput.milliseconds(outcome.elapsed))"
        + (outcome.errors.isEmpty ? "" : "  " + outcome.errors.trimmingNewline))
    }
    let final = try DocumentReader.read(file)
    let finalServer = (try? final.value(at: JSONPath(parsing: "server")))?.map { $0.formatted(.compact) } ?? ""
    let caughtUp = watcher.waitFor(timeout: .seconds(5)) { $0.last == finalServer }
    let status = watcher.stop()
    DemoOutput.say("  what the watcher printed after its first line (each line compared with the one before it):")
    var previous = try JSONValue(parsing: watcher.lines[0].text)
    for (number, line) in watcher.lines.enumerated().dropFirst() {
      let value = (try? JSONValue(parsing: line.text)) ?? .null
      let changes = describe(JSONChangeSet(from: previous, to: value), prefix: "server")
      DemoOutput.say("    line \(number + 1), \(DemoOutput.milliseconds(line.time - writeStart)) after the writers started: \(changes)")
      previous = value
    }
    if !caughtUp { DemoOutput.say("    (the watcher did not print the final value within 5 s)") }
    DemoOutput.say("  the watcher saw \(watcher.lines.count - 1) new version(s) for \(writers.count) writes"
      + " (writes that land between two of its reads arrive as one version); it exited \(status) on SIGTERM.")
    DemoOutput.say("  $ ccsync get --compact \(file) server")
    DemoOutput.say("  \(finalServer)")
    var missing: [String] = []
    for writer in writers {
      let expected = (try? JSONValue(parsing: writer.value)) ?? .string(writer.value)
      let actual = try? final.value(at: JSONPath(parsing: writer.path))
      if actual != expected { missing.append(writer.path) }
    }
    DemoOutput.say(missing.isEmpty
      ? "  all \(writers.count) changes are in the file: no writer overwrote another's field."
      : "  LOST: \(missing.joined(separator: ", ")) did not keep the written value.")
    return ok && caughtUp && missing.isEmpty
  }

  private static func partLock(_ file: String) throws -> Bool {
    DemoOutput.heading("3. The lock every writer takes")
    DemoOutput.say("  While one process holds the file's lock, writers wait (--wait) or give up at once (--nonblock).")
    let holder = try DemoProcess.start(["lock", file, "--", "sleep", "1"])
    DemoOutput.say("  $ ccsync lock \(file) -- sleep 1      (pid \(holder.child.id), holds the lock for 1 s)")
    // Wait until the holder has the lock: a non-blocking try fails while it is held.
    let lockTaken = DemoProcess.waitUntil(timeout: .seconds(5)) {
      (try? SharedFile(path: file).withLock(exclusive: false, wait: .nonBlocking) { true }) == nil
    }
    var ok = lockTaken
    let refused = try show(["set", "--nonblock", file, "theme", "dark"], showStatus: true)
    ok = ok && refused.status == ExitCode.failure
    let waited = try show(["set", "--wait", "5", file, "theme", "dark"], showStatus: true)
    DemoOutput.say("    (it waited \(decimal(seconds(waited.elapsed), places: 2)) s for the lock, then wrote)")
    ok = ok && waited.status == 0
    let holderOutcome = holder.wait()
    ok = try show(["get", file, "theme"]).status == 0 && ok && holderOutcome.status == 0
    return ok
  }

  private static func partStress(_ file: String) throws -> Bool {
    DemoOutput.heading("4. Contention: every process increments one counter")
    DemoOutput.say("  4 processes each make 250 locked read-modify-write increments of \"counter\"; none may be lost.")
    return try show(["stress", "--processes", "4", "--iterations", "250", file]).status == 0
  }

  // MARK: Output

  /// Runs `ccsync ARGUMENTS`, printing the command and its output indented.
  @discardableResult
  private static func show(_ arguments: [String], showStatus: Bool = false) throws -> DemoProcess.Outcome {
    DemoOutput.say("  $ ccsync " + arguments.map(quoted).joined(separator: " "))
    let outcome = try DemoProcess.run(arguments)
    for line in outcome.output.split(separator: "\n", omittingEmptySubsequences: false).dropLast() { DemoOutput.say("  \(line)") }
    for line in outcome.errors.split(separator: "\n") { DemoOutput.say("  \(line)") }
    if showStatus || outcome.status != 0 {
      DemoOutput.say("  exit \(outcome.status) after \(DemoOutput.milliseconds(outcome.elapsed))")
    }
    return outcome
  }

  /// A shell word: quoted when it holds characters a shell would read specially.
  private static func quoted(_ word: String) -> String {
    word.contains(where: { "[]*? '\"$".contains($0) }) ? "'" + word + "'" : word
  }

  private static func describe(_ changes: JSONChangeSet, prefix: String) -> String {
    let parts = changes.changes.map { change -> String in
      let path = ([prefix] + change.path).joined(separator: ".")
      switch change {
      case .set(_, let value): return "\(path) = \(value.formatted(.compact))"
      case .remove: return "\(path) removed"
      }
    }
    return parts.isEmpty ? "(no change)" : parts.joined(separator: ", ")
  }


  private static func pad(_ text: String, _ width: Int) -> String {
    text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
  }
}

extension String {
  /// The text without one trailing newline.
  var trimmingNewline: String { hasSuffix("\n") ? String(dropLast()) : self }
}
