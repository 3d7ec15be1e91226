import Foundation
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

/// A child process driven line by line: the test writes commands to its standard input and
/// waits (with a deadline) for lines on its standard output. Used with the test helper's
/// `session` command to act at exact points in another process's life.
///
/// `@unchecked Sendable`: the output lines are behind a `Protected`; the pipes are used by one
/// reader thread and the test thread respectively.
final class InteractiveChild: @unchecked Sendable {
  let process = Process()
  private let input = Pipe()
  private let output = Pipe()
  private let errors = Pipe()
  private struct Lines {
    var complete: [String] = []
    var partial = ""
  }
  private final class Output: Sendable {
    let lines = Protected(Lines())
    let errorText = Protected("")
  }
  private let buffers = Output()
  private var consumed = 0

  /// Starts `executable` with `arguments`, and `environment` over this process's.
  init(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws {
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if !environment.isEmpty {
      process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    }
    process.standardInput = input
    process.standardOutput = output
    process.standardError = errors
    let buffers = self.buffers
    output.fileHandleForReading.readabilityHandler = { handle in
      let data = handle.availableData
      guard !data.isEmpty else { handle.readabilityHandler = nil; return }
      buffers.lines.withLock { state in
        state.partial += String(decoding: data, as: UTF8.self)
        while let newline = state.partial.firstIndex(of: "\n") {
          state.complete.append(String(state.partial[..<newline]))
          state.partial = String(state.partial[state.partial.index(after: newline)...])
        }
      }
    }
    errors.fileHandleForReading.readabilityHandler = { handle in
      let data = handle.availableData
      guard !data.isEmpty else { handle.readabilityHandler = nil; return }
      buffers.errorText.withLock { $0 += String(decoding: data, as: UTF8.self) }
    }
    try process.run()
  }

  deinit {
    if process.isRunning {
      kill(process.processIdentifier, SIGKILL)
      process.waitUntilExit()
    }
  }

  /// Sends one line.
  func send(_ line: String) {
    input.fileHandleForWriting.write(Data((line + "\n").utf8))
  }

  /// Complete lines received so far, without their newlines.
  var receivedLines: [String] {
    buffers.lines.withLock { $0.complete }
  }

  /// What the child wrote to standard error so far.
  var standardError: String { buffers.errorText.withLock { $0 } }

  /// Waits for the next not-yet-consumed line that starts with `prefix` and returns it, or
  /// `nil` when `deadline` passes. Lines before it are consumed too.
  func nextLine(startingWith prefix: String, deadline: Duration = .seconds(10)) -> String? {
    var found: String?
    waitUntil(deadline: deadline) {
      let all = receivedLines
      guard consumed < all.count else { return false }
      for index in consumed..<all.count where all[index].hasPrefix(prefix) {
        consumed = index + 1
        found = all[index]
        return true
      }
      return false
    }
    return found
  }

  /// Sends `command` and waits for the reply line starting with `reply`.
  @discardableResult
  func request(_ command: String, reply: String = "ok", deadline: Duration = .seconds(10)) -> String? {
    send(command)
    return nextLine(startingWith: reply, deadline: deadline)
  }

  /// Waits until a received line after the first `after` ones matches `predicate`.
  func waitForLine(after: Int = 0, deadline: Duration = .seconds(10), _ predicate: (String) -> Bool) -> Bool {
    waitUntil(deadline: deadline) { receivedLines.dropFirst(after).contains(where: predicate) }
  }

  /// Whether the child is stopped (state `T` in `/proc/PID/stat`).
  var isStopped: Bool {
    guard let stat = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/stat", encoding: .utf8),
          let close = stat.lastIndex(of: ")") else { return false }
    return stat[stat.index(close, offsetBy: 2)] == "T"
  }

  /// Whether any received line (consumed or not) starts with `prefix`.
  func hasLine(startingWith prefix: String) -> Bool {
    receivedLines.contains { $0.hasPrefix(prefix) }
  }

  /// Sends a signal and waits for the child to end; returns the termination status.
  func terminate(signal: Int32 = SIGTERM) -> (status: Int32, signaled: Bool) {
    kill(process.processIdentifier, signal)
    return waitForEnd()
  }

  /// Waits for the child to end; returns its status, and whether a signal ended it (the
  /// status is then the signal's number).
  func waitForEnd() -> (status: Int32, signaled: Bool) {
    process.waitUntilExit()
    return (process.terminationStatus, process.terminationReason == .uncaughtSignal)
  }

  /// Whether the child is still running after `duration`: for a test that expects it to wait
  /// (for a lock another process holds) rather than end.
  func keepsRunning(for duration: Duration) -> Bool {
    !waitUntil(deadline: duration) { !process.isRunning }
  }

  /// Waits up to `deadline` for the child to end on its own; if it has not, kills `pid` (the
  /// process expected to end, the child or one it started) with `SIGKILL`, and waits for the
  /// child. Returns whether it ended on its own.
  func endsOnItsOwn(within deadline: Duration, killingIfNot pid: Int32) -> Bool {
    let ended = waitUntil(deadline: deadline) { !process.isRunning }
    if !ended { kill(pid, SIGKILL) }
    process.waitUntilExit()
    return ended
  }

  /// Closes standard input and waits for the child to exit.
  func finish() -> Int32 {
    try? input.fileHandleForWriting.close()
    process.waitUntilExit()
    return process.terminationStatus
  }
}
