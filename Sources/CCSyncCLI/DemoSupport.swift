import CCSync
import CCSyncProcesses

/// Running copies of `ccsync` for the demo and collecting what they print.
enum DemoProcess {
  /// What a finished command printed, and how it ended.
  struct Outcome {
    var status: Int32
    var output: String
    var errors: String
    var elapsed: Duration
  }

  /// Runs `ccsync ARGUMENTS` to completion; output goes to unlinked temporary files, so a
  /// chatty child never blocks on a pipe.
  static func run(_ arguments: [String]) throws -> Outcome {
    let started = try start(arguments)
    return started.wait()
  }

  /// A started `ccsync ARGUMENTS` whose output is collected in temporary files.
  final class Started {
    let child: Subprocess
    let startTime: ContinuousClock.Instant
    private let output: FileDescriptor
    private let errors: FileDescriptor

    init(child: Subprocess, output: FileDescriptor, errors: FileDescriptor) {
      self.child = child
      self.output = output
      self.errors = errors
      startTime = ContinuousClock.now
    }

    func wait() -> Outcome {
      finished(status: child.waitForStatus())
    }

    /// The outcome of the process once it has been reaped with `status`.
    func finished(status: Int32) -> Outcome {
      let elapsed = ContinuousClock.now - startTime
      return Outcome(status: status, output: DemoProcess.contents(of: output), errors: DemoProcess.contents(of: errors), elapsed: elapsed)
    }
  }

  static func start(_ arguments: [String]) throws -> Started {
    let output = try FileDescriptor.temporaryFile(containing: [])
    let errors = try FileDescriptor.temporaryFile(containing: [])
    do {
      let child = try Subprocess.start(
        [ThisProcess.executablePath] + arguments, standardOutput: output, standardError: errors)
      return Started(child: child, output: output, errors: errors)
    } catch {
      throw CommandFailure(error.exitCode, error.description)
    }
  }

  /// Polls `condition` every 10 ms until it holds or `timeout` passes.
  static func waitUntil(timeout: Duration, _ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now + timeout
    while !condition() {
      if ContinuousClock.now >= deadline { return false }
      ContinuousClock.sleepThread(for: .milliseconds(10))
    }
    return true
  }

  /// Everything written to the file behind `descriptor`, from its start.
  static func contents(of descriptor: FileDescriptor) -> String {
    String(decoding: (try? descriptor.readContents()) ?? [], as: UTF8.self)
  }
}

/// A long-running `ccsync watch` whose standard output the demo reads line by line.
final class DemoWatcher {
  let child: Subprocess
  private let output: FileDescriptor
  private var partial: [UInt8] = []
  /// The lines so far, with the time each arrived.
  private(set) var lines: [(text: String, time: ContinuousClock.Instant)] = []

  init(_ arguments: [String]) throws {
    let pipe = try FileDescriptor.makePipe(nonBlockingRead: true)
    // This process keeps only the read end: the watcher's exit then ends the pipe.
    defer { try? pipe.writeEnd.close() }
    do {
      child = try Subprocess.start([ThisProcess.executablePath] + arguments, standardOutput: pipe.writeEnd)
    } catch {
      throw CommandFailure(error.exitCode, error.description)
    }
    output = pipe.readEnd
  }

  /// Reads what has arrived, waiting up to `timeout` for `condition` to hold.
  /// - Returns: whether it held.
  @discardableResult
  func waitFor(timeout: Duration, _ condition: ([String]) -> Bool) -> Bool {
    let deadline = ContinuousClock.now + timeout
    while true {
      readAvailable()
      if condition(lines.map(\.text)) { return true }
      let left = deadline - ContinuousClock.now
      if left <= .zero { return false }
      _ = waitForInput([output], timeout: min(left, .milliseconds(50)))
    }
  }

  private func readAvailable() {
    partial += (try? output.readAvailable()) ?? []
    let now = ContinuousClock.now
    while let newline = partial.firstIndex(of: UInt8(ascii: "\n")) {
      lines.append((String(decoding: partial[..<newline], as: UTF8.self), now))
      partial.removeSubrange(...newline)
    }
  }

  /// Sends SIGTERM and returns the exit status.
  func stop() -> Int32 {
    try? child.send(.terminate)
    return child.waitForStatus()
  }
}

/// A directory made with `mkdtemp` and removed with its files.
struct DemoDirectory {
  let path: String

  init() throws(SystemError) {
    path = try FileTree.makeTemporaryDirectory(prefix: "ccsync-demo")
  }

  /// Removes the directory and the files the demo made in it.
  func remove() {
    try? FileTree.removeTree(path)
  }
}

/// The demos' lines on standard output: one `write` each, so they interleave whole with the
/// child processes' output.
enum DemoOutput {
  /// A blank line, then `text`.
  static func heading(_ text: String) {
    say("")
    say(text)
  }

  static func say(_ text: String) {
    StandardStreams.writeLine(text)
  }

  /// `duration` in whole milliseconds, e.g. `12 ms`.
  static func milliseconds(_ duration: Duration) -> String {
    "\(Int((seconds(duration) * 1000).rounded())) ms"
  }
}
