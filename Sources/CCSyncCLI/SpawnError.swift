import CCSync
import CCSyncProcesses

/// A command `ccsync` could not start (`lock`, `watch --exec`, `edit`'s editor), reported as
/// shells do: `cannot run 'CMD': REASON`, status 127 when it is not found, 126 otherwise.
struct SpawnError: Error, CustomStringConvertible {
  var command: String
  var error: SystemError

  var description: String {
    "cannot run '\(command)': \(error.reason)"
  }

  /// 127 for a command not found, 126 otherwise, as shells report.
  var exitCode: Int32 {
    error.errorNumber == .noSuchFileOrDirectory || error.errorNumber == .notDirectory
      ? ExitCode.commandNotFound : ExitCode.commandNotExecutable
  }
}

extension Subprocess {
  /// Starts `arguments` as ``Subprocess/spawn(_:environment:standardInput:standardOutput:standardError:newProcessGroup:)``
  /// does; a failure becomes a ``SpawnError`` naming the command.
  static func start(
    _ arguments: [String], environment: [String: String?] = [:], standardInput: FileDescriptor? = nil,
    standardOutput: FileDescriptor? = nil, standardError: FileDescriptor? = nil, newProcessGroup: Bool = false,
    closingInheritedDescriptors: Bool = false
  ) throws(SpawnError) -> Subprocess {
    do {
      return try spawn(
        arguments, environment: environment, standardInput: standardInput, standardOutput: standardOutput,
        standardError: standardError, newProcessGroup: newProcessGroup, closingInheritedDescriptors: closingInheritedDescriptors)
    } catch {
      throw SpawnError(command: arguments.first ?? "", error: error)
    }
  }

  /// Waits for the process to end and returns its status as a shell reports it (128+N when
  /// killed by signal N); EX_IOERR when it cannot be waited for.
  func waitForStatus() -> Int32 {
    (try? waitForExit())?.shellStatus ?? ExitCode.ioError
  }

  /// The status of the process if it has ended (reaping it), `nil` while it runs; EX_IOERR
  /// when it is not this process's child any more.
  func statusIfExited() -> Int32? {
    do {
      return try exitStatusIfExited()?.shellStatus
    } catch {
      return ExitCode.ioError
    }
  }
}

/// Waits until one of `sources` has input or `timeout` passes (`nil`: no limit).
/// - Returns: which sources are readable (or hung up); all `false` after the timeout, a
///   signal, or a failed wait (the callers' loops look again).
func waitForInput(_ sources: [any InputSource], timeout: Duration?) -> [Bool] {
  (try? waitForInput(from: sources, timeout: timeout)) ?? sources.map { _ in false }
}

extension ChildSupervisor {
  /// Starts the command as ``start(environment:standardInput:)`` does; a failure becomes a
  /// ``CommandFailure`` with the shell's status (127 not found, 126 not executable) and the
  /// message `cannot run 'CMD': REASON`.
  func startReportingFailure(environment: [String: String?] = [:]) throws(CommandFailure) {
    do {
      try start(environment: environment)
    } catch {
      let failure = SpawnError(command: command.first ?? "", error: error)
      throw CommandFailure(failure.exitCode, failure.description)
    }
  }
}
