import CCSync
import CCSyncProcesses

// `ccsync`: a small dispatcher over the commands of CommandRegistry. Each command lives in its
// own file as a type declaring its options and `run(_:)`, which returns the exit status;
// errors are mapped in ExitCode.swift. No Foundation: start-up time matters (`ccsync get` is
// compared with jq).

/// Runs the command line `arguments` (without the program name) and returns the exit status.
@MainActor
func runMain(_ arguments: [String]) -> Int32 {
  guard let name = arguments.first else {
    StandardStreams.write(Help.text(for: Help.top))
    return ExitCode.success
  }
  switch name {
  case "-V", "--version":
    return run(VersionCommand.self, Array(arguments.dropFirst()))
  case "-h", "--help":
    StandardStreams.write(Help.text(for: Help.top))
    return ExitCode.success
  default:
    break
  }
  guard let command = CommandRegistry.command(named: name) else {
    let message = name.hasPrefix("-")
      ? "Unknown option '\(name)'" + Suggestion.nearest(to: name, among: ["--help", "--version"])
      : "Unknown subcommand '\(name)'" + Suggestion.nearest(to: name, among: CommandRegistry.visibleSpecs.map(\.name))
    Help.report(UsageError(message: message, command: Help.top))
    return ExitCode.usage
  }
  return run(command, Array(arguments.dropFirst()))
}

/// Parses `arguments` for `command` and runs it.
@MainActor
func run(_ command: any Command.Type, _ arguments: [String]) -> Int32 {
  if let index = firstArgumentNotUTF8() {
    Help.report(UsageError(
      message: "Argument \(index) is not valid UTF-8: ccsync takes paths and values as UTF-8 text", command: command.spec))
    return ExitCode.usage
  }
  let parsed: ParsedArguments
  do {
    switch try ArgumentParser.parse(arguments, for: command.spec) {
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

StandardStreams.exitOnOutputFailure(status: ExitCode.ioError)
_ = Signal.ignoredAtStart  // read before any command changes a signal's disposition
// Started with SIGCHLD ignored, the kernel would reap edit's editor and stress's workers
// itself and every wait for them would fail (ECHILD); children get the default from here too.
try? Signal.childStatusChanged.restoreDefaultAction()
ThisProcess.exit(runMain(Array(CommandLine.arguments.dropFirst())))
