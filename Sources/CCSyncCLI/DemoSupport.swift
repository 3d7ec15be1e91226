import CCSync
import CCSyncProcesses

/// Running copies of `ccsync` for the demo and collecting what they print.
enum DemoProcess {
  /// What a finished command printed, and how it ended.
  struct Outcome {
    var status: Int32
    var output: String
    var errors: String
    var seconds: Double
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
    let startTime: Double
    private let output: FileDescriptor
    private let errors: FileDescriptor

    init(child: Subprocess, output: FileDescriptor, errors: FileDescriptor) {
      self.child = child
      self.output = output
      self.errors = errors
      startTime = MonotonicClock.now()
    }

    func wait() -> Outcome {
      finished(status: child.waitForStatus())
    }

    /// The outcome of the process once it has been reaped with `status`.
    func finished(status: Int32) -> Outcome {
      let seconds = MonotonicClock.now() - startTime
      return Outcome(status: status, output: DemoProcess.contents(of: output), errors: DemoProcess.contents(of: errors), seconds: seconds)
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

  /// Polls `condition` every 10 ms until it holds or `timeout` seconds pass.
  static func waitUntil(timeout: Double, _ condition: () -> Bool) -> Bool {
    let deadline = MonotonicClock.now() + timeout
    while !condition() {
      if MonotonicClock.now() >= deadline { return false }
      MonotonicClock.sleep(seconds: 0.01)
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
  /// The lines so far, with the time each arrived (monotonic seconds).
  private(set) var lines: [(text: String, time: Double)] = []

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

  /// Reads what has arrived, waiting up to `timeout` seconds for `condition` to hold.
  /// - Returns: whether it held.
  @discardableResult
  func waitFor(timeout: Double, _ condition: ([String]) -> Bool) -> Bool {
    let deadline = MonotonicClock.now() + timeout
    while true {
      readAvailable()
      if condition(lines.map(\.text)) { return true }
      let left = deadline - MonotonicClock.now()
      if left <= 0 { return false }
      _ = waitForInput([output], timeout: min(left, 0.05))
    }
  }

  private func readAvailable() {
    partial += (try? output.readAvailable()) ?? []
    let now = MonotonicClock.now()
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
