import CCSync
import CCSyncProcesses

// `ccsync`: a small dispatcher. Each command lives in its own file as `run(_:)`, taking the
// parsed arguments and returning the exit status; errors are mapped in ExitCode.swift.
// No Foundation: start-up time matters (`ccsync get` is compared with jq).

/// The commands by name, with their descriptions and bodies.
let commandTable: [String: (spec: CommandSpec, run: (ParsedArguments) throws -> Int32)] = [
  "get": (Help.get, GetCommand.run),
  "load": (Help.load, GetCommand.runLoad),
  "set": (Help.set, SetCommand.run),
  "delete": (Help.delete, DeleteCommand.run),
  "save": (Help.save, SaveCommand.run),
  "watch": (Help.watch, WatchCommand.run),
  "lock": (Help.lock, LockCommand.run),
  "edit": (Help.edit, EditCommand.run),
  "stress": (Help.stress, StressCommand.run),
  "stress-worker": (Help.stressWorker, StressCommand.runWorker),
  "demo": (Help.demo, DemoCommand.run),
  "mirror": (Help.mirror, MirrorCommand.run),
]

/// Runs the command line `arguments` (without the program name) and returns the exit status.
@MainActor
func runMain(_ arguments: [String]) -> Int32 {
  guard let name = arguments.first else {
    StandardStreams.write(Help.text(for: Help.top))
    return ExitCode.success
  }
  switch name {
  case "--version":
    StandardStreams.writeLine("ccsync \(Help.version)")
    return ExitCode.success
  case "-h", "--help":
    StandardStreams.write(Help.text(for: Help.top))
    return ExitCode.success
  case "help":
    return runHelp(Array(arguments.dropFirst()))
  default:
    break
  }
  guard let command = commandTable[name] else {
    let message = name.hasPrefix("-") ? "Unknown option '\(name)'" : "Unknown subcommand '\(name)'"
    Help.report(UsageError(message: message, command: Help.top))
    return ExitCode.usage
  }
  if let index = firstArgumentNotUTF8() {
    Help.report(UsageError(
      message: "Argument \(index) is not valid UTF-8: ccsync takes paths and values as UTF-8 text", command: command.spec))
    return ExitCode.usage
  }
  let parsed: ParsedArguments
  do {
    switch try ArgumentParser.parse(Array(arguments.dropFirst()), for: command.spec) {
    case .help:
      StandardStreams.write(Help.text(for: command.spec))
      return ExitCode.success
    case .run(let arguments):
      parsed = arguments
    }
  } catch {
    Help.report(error)
    return ExitCode.usage
  }
  do {
    return try command.run(parsed)
  } catch let error as UsageError {
    Help.report(error)
    return ExitCode.usage
  } catch {
    let failure = CommandFailure(error, file: parsed.operands.first)
    failure.report()
    return failure.code
  }
}

/// The position (1 for the first after the program's name) of the first command-line
/// argument that is not valid UTF-8, if any. `CommandLine.arguments` replaces such bytes with
/// U+FFFD, which would silently name another file or store another value.
func firstArgumentNotUTF8() -> Int? {
  for index in 1..<Int(CommandLine.argc) {
    guard let argument = CommandLine.unsafeArgv[index] else { continue }
    if String(validatingCString: argument) == nil { return index }
  }
  return nil
}

/// `ccsync help [SUBCOMMAND]`.
@MainActor
func runHelp(_ arguments: [String]) -> Int32 {
  guard let name = arguments.first, name != "-h", name != "--help" else {
    StandardStreams.write(Help.text(for: arguments.isEmpty ? Help.top : Help.helpCommand))
    return ExitCode.success
  }
  guard arguments.count == 1, let command = commandTable[name] ?? (name == "help" ? (Help.helpCommand, { _ in 0 }) : nil) else {
    let message = arguments.count > 1 ? "Unexpected argument '\(arguments[1])'" : "Unknown subcommand '\(name)'"
    Help.report(UsageError(message: message, command: Help.helpCommand))
    return ExitCode.usage
  }
  StandardStreams.write(Help.text(for: command.spec))
  return ExitCode.success
}

StandardStreams.exitOnOutputFailure(status: ExitCode.ioError)
_ = Signal.ignoredAtStart  // read before any command changes a signal's disposition
// Started with SIGCHLD ignored, the kernel would reap edit's editor and stress's workers
// itself and every wait for them would fail (ECHILD); children get the default from here too.
try? Signal.childStatusChanged.restoreDefaultAction()
ThisProcess.exit(runMain(Array(CommandLine.arguments.dropFirst())))
