import CCSync
import CCSyncProcesses

/// `ccsync watch [-c] [--count N] [--timeout SECS] [--poll SECS] FILE [PATH]
/// [--exec | --restart | --signal SIG] [--debounce SECS] [-- CMD ARGS...]`.
///
/// The document is followed as every reader follows one (`DocumentFollower`: the gate, the
/// schema, the grace of a file caught mid-write). Without a command to run, each line is
/// printed on the thread of the follower's look (for an etcd key, the watch thread that read
/// the event: no thread is woken between the event and the line). One thread does everything
/// else, and with a command, the printing too: it waits in
/// `poll(2)` on a self-pipe the follower's handler writes to and on the signal pipe (SIGINT,
/// SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGCHLD), with a timeout for the next deadline
/// (--timeout, a restart's SIGKILL, the end of a debounce period). Every way the watch ends goes through
/// ``WatchSession/finish(_:)``, which stops the command's process group; none calls `exit` or
/// dies of a signal before it.
enum WatchCommand: Command {
  static let compact = OptionSpec("c", "compact", help: "Accepted for symmetry with 'get': lines are always compact.")
  static let count = OptionSpec(nil, "count", value: "n", .integer(1...Int.max), help: "Exit 0 once <n> lines are printed.")
  static let timeout = OptionSpec(nil, "timeout", value: "secs", .seconds(positive: false), help: "Stop after <secs> seconds: status 0, or 2 when --count was not reached.")
  static let poll = OptionSpec(nil, "poll", value: "secs", .seconds(positive: true), help: "Poll every <secs> seconds instead of using inotify (files only).")
  static let exec = OptionSpec(nil, "exec", help: "Run <command> after each printed value (value on stdin and in CCSYNC_VALUE).")
  static let restart = OptionSpec(nil, "restart", help: "Run <command> now and restart it on each new value; exit with its status when it exits.")
  static let signal = OptionSpec(nil, "signal", value: "sig", .signal, help: "Run <command> now and send it <sig> (HUP, USR1, 10) on each new value; exit with its status when it exits.")
  static let debounce = OptionSpec(nil, "debounce", value: "secs", .seconds(positive: false), help: "Act on a new value once it has been unchanged for <secs> (at the latest after 4 x <secs>); default 0.")

  static let spec = CommandSpec(
    name: "watch", overview: "Print the value at <path> now and each time it changes, one compact JSON line each.",
    operands: [Help.fileOperand, Help.pathOperand],
    options: [Help.jsonc, compact, count, timeout, poll, exec, restart, signal, debounce] + GateOptions.all,
    exclusive: [[exec, restart, signal]],
    discussion: """
      Runs until SIGINT, SIGTERM or SIGHUP (status 0). A missing file or <path>, or an invalid file, \
      prints nothing on standard output and a note on standard error; the next valid value is printed.
      With --exec, runs that arrive while <command> runs coalesce into one more run. With --restart, \
      <command> is stopped with SIGTERM (SIGKILL after 5 s) and started again. With --signal, \
      <command> is started once and sent <sig> (to its process, not its group, as 'systemctl reload' \
      does) on each new value; it is never restarted. <command> gets CCSYNC_VALUE (the compact value, \
      unset while there is none; under --restart and --signal the value it started with) and CCSYNC_FILE.
      With --debounce, lines are still printed at once, but <command> is run, restarted or signalled \
      once the value has been unchanged for <secs>, and at the latest 4 x <secs> after the first \
      change not acted on (consul-template's wait); the value found at start is acted on at once.
      A version that fails the schema ('$schema', or --schema) or --check is not printed or acted \
      on: one line on standard error says why, and the next good version is printed and acted on.
      A command given without --exec, --restart or --signal is run as with --exec; if that command \
      holds one of those options (written after '--' by mistake), the watch refuses to start (64): \
      put them before '--', or give --exec to pass them on to the command.
      """,
    takesCommand: true)

  /// Watch's own options that, found in a command given with no mode, were most likely meant
  /// for the watch: `watch FILE -- ./reload.sh --restart`.
  static let modeOptionsInCommand = ["--exec", "--restart", "--signal", "--debounce"]

  static func run(_ arguments: ParsedArguments) throws -> Int32 {
    let command = arguments.command ?? []
    var mode: WatchChildren.Mode?
    if arguments.has(restart) {
      mode = .restart
    } else if let chosen = arguments.signal(signal) {
      mode = .signal(chosen)
    } else if arguments.has(exec) || !command.isEmpty {
      mode = .exec
    }
    if !arguments.has(exec), !arguments.has(restart), !arguments.has(signal),
       let misplaced = command.dropFirst().first(where: { token in modeOptionsInCommand.contains { token == $0 || token.hasPrefix($0 + "=") } }) {
      throw arguments.usageError(
        "The option '\(misplaced)' is after '--', so it would go to '\(command[0])' and the watch would run the command on every change; put it before '--' (or give --exec to pass it on)")
    }
    if mode != nil && command.isEmpty {
      let option = "--" + (arguments.givenOptions.first { [exec, restart, signal].contains($0) }?.long ?? "exec")
      throw arguments.usageError("Missing expected argument '<command>' after '--' for '\(option)'")
    }
    let debounceTime = arguments.seconds(debounce) ?? .zero
    if arguments.has(debounce) && mode == nil {
      throw arguments.usageError("The option '--debounce' needs a command to run ('--exec', '--restart' or '--signal' and '-- <command>')")
    }
    let lines = arguments.integer(count)
    let stopAfter = arguments.seconds(timeout)
    let pollInterval = arguments.seconds(poll)
    let file = arguments.operands[0]
    let address = try arguments.address()
    if pollInterval != nil, !address.isFile {
      throw arguments.usageError(
        "The option '--poll' is for files on file systems without inotify; '\(file)' is an etcd key, whose changes etcd's watch stream reports")
    }
    let path = try arguments.path(at: 1)
    let session = WatchSession(
      address: address, path: path, pathText: arguments.operands.count > 1 ? arguments.operands[1] : ".",
      count: lines, timeout: stopAfter,
      children: mode.map { WatchChildren(mode: $0, command: command, file: file, debounce: debounceTime) },
      gate: try GateOptions.gate(arguments, documentName: address.name),
      watcher: pollInterval.map { FileWatcher(mode: .polling(interval: $0)) } ?? FileWatcher.shared)
    return try session.run()
  }
}

/// The state of one `ccsync watch` run.
///
/// `@unchecked Sendable`: what is printed (`printed`, `lastPrinted`, `gap`, `outputFailure`,
/// `refusal`) is read and written holding `printing`, by the follower's thread when there is
/// no command and by the run loop's; everything else is the run loop's thread's alone.
final class WatchSession: @unchecked Sendable {
  /// What the last note on standard error was about; a note is given once per state.
  enum Gap: Equatable {
    case missingFile
    case noValue
    case invalid(String)
  }

  let address: DocumentAddress
  /// What notes name: the file as given, or the etcd key's URL.
  let file: String
  let path: JSONPath
  let pathText: String
  let count: Int?
  let deadline: ContinuousClock.Instant?
  let timeout: Duration?
  let children: WatchChildren?
  let document: SharedDocument
  private var printed = 0
  private var lastPrinted: JSONValue?
  private var gap: Gap?
  /// A write to standard output that failed; it ends the watch.
  private var outputFailure: SystemError?
  /// The cluster's refusal to watch the key (credentials, permission) after the client
  /// authenticated again; it ends the watch (77) rather than leaving it waiting for ever.
  private var refusal: StoreError?
  /// What the follower found, in order: for an etcd key, every version its watch stream
  /// delivered, not only the latest.
  private let events = Protected<[DocumentFollower.Event]>([])
  /// Held while printing and while reading what was printed.
  private let printing = ConditionLock()

  init(
    address: DocumentAddress, path: JSONPath, pathText: String, count: Int?, timeout: Duration?, children: WatchChildren?,
    gate: DocumentGate = .standard, watcher: FileWatcher = .shared
  ) {
    self.address = address
    self.file = address.name
    self.path = path
    self.pathText = pathText
    self.count = count
    self.timeout = timeout
    self.deadline = timeout.map { ContinuousClock.now + $0 }
    self.children = children
    document = address.document(gate: gate, watcher: watcher)
  }

  private var countReached: Bool { count.map { printed >= $0 } ?? false }

  /// Runs until a signal, --count, --timeout, a failed write to standard output or (under
  /// --restart) the command's own exit ends the watch.
  /// - Throws: `SystemError` when the signal pipe or the wake-up pipe cannot be opened; for
  ///   an etcd key, what its first read throws when the cluster cannot be reached or refuses
  ///   (later outages are retried by the key's watch, with a note on standard error), and
  ///   the cluster's refusal of the watch itself, with a fresh token, later on.
  func run() throws -> Int32 {
    // SIGQUIT and SIGPIPE (a reader that went away) are caught too, so that the command is
    // stopped before the process ends by them.
    let signals = try SignalPipe.install([.interrupt, .terminate, .hangUp, .quit, .brokenPipe, .childStatusChanged])
    let wake = try WakeUpChannel()
    // Read first: a key's watch then starts at the revision after the one read, so it misses
    // no change and repeats none; a file is looked at once more after its watch started.
    let initial = try checkInitial()
    let printsOnLookThread = children == nil
    let follower = document.follow(everyVersion: !address.isFile) { [self] event in
      events.withLock { $0.append(event) }
      // With no command to run, the loop is woken only when the watch is to end.
      if printsOnLookThread, !printing.withLock({ check() }) { return }
      wake.wakeUp()
    }
    defer { follower.stop() }
    if let initial { follower.followSchema(of: initial) }
    if address.isFile { follower.lookAgain("the watch started") }

    if let outputFailure = printing.withLock({ outputFailure }) { return finish(afterOutputFailure: outputFailure) }
    // --restart and --signal start the command at once, with no value if there is none yet.
    if let children, children.runsContinuously, !children.hasStarted {
      if let status = children.start(with: nil) { return status }
    }
    while true {
      let countReached = printing.withLock { self.countReached }
      // exec: the last value's run (at once, even within a debounce period: no value can
      // follow) and one coalesced run finish first; restart, signal: stop now.
      if countReached, let children, !children.runsContinuously { children.actOnDeferredValue() }
      // A command that cannot be run ends the watch with 126 or 127, --count or not.
      if let status = children?.spawnFailure { return finish(status) }
      if countReached && (children.map { $0.runsContinuously || $0.isIdle } ?? true) {
        return finish(ExitCode.success)
      }
      if let status = children?.exitedOnItsOwn { return finish(status) }

      var wakeAt = [deadline, children?.nextDeadline].compactMap { $0 }
      // SIGCHLD wakes the wait; a periodic look is a safety net should one be missed.
      if let children, !children.isIdle { wakeAt.append(ContinuousClock.now + .seconds(1)) }
      let wait = wakeAt.min().map { max($0 - ContinuousClock.now, .zero) }
      let ready = waitForInput([signals, wake], timeout: wait)

      for signal in signals.drain() where signal != .childStatusChanged {
        return finish(endedBy: signal)
      }
      children?.reap()
      if ready[1] { wake.drain() }
      let now = ContinuousClock.now
      let (outputFailure, refusal, printed) = printing.withLock {
        if ready[1] { _ = check() }
        return (self.outputFailure, self.refusal, self.printed)
      }
      if let outputFailure { return finish(afterOutputFailure: outputFailure) }
      if let refusal {
        _ = finish(ExitCode.permission)
        throw StorageError.store(refusal)
      }
      children?.tick(now: now)
      if let deadline, now >= deadline {
        if let count, printed < count {
          StandardStreams.writeLine(
            "ccsync: --timeout \(timeout.map(format) ?? "") s passed after \(printed) of \(count) values", toStandardError: true)
          return finish(ExitCode.timedOut)
        }
        return finish(ExitCode.success)
      }
    }
  }

  /// Stops any command still running and returns `status`.
  private func finish(_ status: Int32) -> Int32 {
    children?.shutDown()
    return status
  }

  /// Stops any command still running, then ends as `signal` asks: SIGINT, SIGTERM and SIGHUP
  /// with status 0; SIGQUIT and SIGPIPE by that signal, as they would have without a handler.
  private func finish(endedBy signal: Signal) -> Int32 {
    let status = finish(ExitCode.success)
    if signal == .quit || signal == .brokenPipe { signal.endProcess() }
    return status
  }

  /// Stops any command still running after a write to standard output failed. A reader that
  /// went away (`EPIPE`) ends the process by SIGPIPE, as it would have without a handler,
  /// unless SIGPIPE was ignored at start; any other failure is reported and ends it with 74.
  private func finish(afterOutputFailure error: SystemError) -> Int32 {
    let readerWentAway = error.errorNumber == .brokenPipe && !Signal.ignoredAtStart.contains(.brokenPipe)
    if !readerWentAway { StandardStreams.reportOutputFailure(error) }
    let status = finish(ExitCode.ioError)
    if readerWentAway { Signal.brokenPipe.endProcess() }
    return status
  }

  private func format(_ duration: Duration) -> String {
    let seconds = seconds(duration)
    return seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
  }

  /// The first look at the document; returns the version taken, if any. A file that cannot
  /// be read counts as invalid (it may be mid-write); an etcd cluster that cannot be reached,
  /// or refuses, ends the watch (69, 77) rather than being waited for.
  private func checkInitial() throws -> JSONValue? {
    do {
      guard let value = try document.read() else {
        note(.missingFile)
        return nil
      }
      // The first version is judged as every later one is: a refused one is not acted on.
      if document.gateApplies(to: value) { try document.judge(value) }
      show(value, initial: true)
      return value
    } catch {
      if case .store = error, !address.isFile { throw error }
      // Said once per version, whoever finds it first: this read or the follower's look.
      if document.isFirstReport(of: error) { note(.invalid(error.description), always: true) }
      return nil
    }
  }

  /// Takes what the follower found since the last look, in order, and prints each new value.
  /// Holding `printing`. Returns whether the watch is to end (--count reached, standard output
  /// failed, the watch refused).
  private func check() -> Bool {
    let found = events.withLock { events in
      defer { events = [] }
      return events
    }
    for event in found where !countReached && outputFailure == nil && refusal == nil {
      switch event {
      case .changed(let value, _, _): show(value, initial: false)
      case .missing: note(.missingFile)
      // The follower tells each once per version: two versions refused for the same
      // reason are two lines.
      case .rejected(let error), .invalid(let error): note(.invalid(error.description), always: true)
      case .refused(let error): refusal = error
      case .schemaChanged: break  // nothing refused, nothing new to act on
      }
    }
    return countReached || outputFailure != nil || refusal != nil
  }

  private func show(_ document: JSONValue, initial: Bool) {
    let value: JSONValue?
    do {
      value = try document.value(at: path)
    } catch {
      note(.invalid("\(error) in '\(file)'"))
      return
    }
    guard let value else {
      note(.noValue)
      return
    }
    if gap == nil, let lastPrinted, lastPrinted == value { return }
    do {
      try StandardStreams.writeLineToOutput(value.formatted(.compact))
    } catch {
      outputFailure = error
      return
    }
    lastPrinted = value
    gap = nil
    printed += 1
    children?.valuePrinted(value, initial: initial)
  }

  /// Notes `kind` on standard error, once per state unless `always` (a version the follower
  /// reports, which it tells once per version).
  private func note(_ kind: Gap, always: Bool = false) {
    lastPrinted = nil
    guard always || kind != gap else { return }
    gap = kind
    let message: String
    switch kind {
    case .missingFile: message = address.isFile ? "'\(file)' does not exist; waiting for it" : "'\(file)': no such key; waiting for it"
    case .noValue: message = "no value at '\(pathText)' in '\(file)'; waiting for one"
    case .invalid(let reason): message = reason + "; waiting for a valid version"
    }
    StandardStreams.writeLine("ccsync: " + message, toStandardError: true)
  }
}
