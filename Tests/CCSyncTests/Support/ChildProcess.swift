import Foundation

/// A command run as a child process with Foundation's `Process`.
///
/// Standard output and error go to files in a private temporary directory rather than pipes:
/// a chatty child never blocks on a full pipe, and a grandchild that inherits the output
/// (a `sleep` under `flock`) cannot keep a reader waiting for end of file.
///
/// Use ``run(_:_:input:environment:deadline:)`` for a command that finishes, ``start(_:_:environment:)``
/// for one that runs alongside the test (a lock holder) and is stopped with ``stop()``.
/// `@unchecked Sendable`: `Process` is thread-safe for the calls made here, the rest is immutable.
final class ChildProcess: @unchecked Sendable {
  /// What a finished child left behind.
  struct Outcome: Sendable {
    /// The exit status, or the signal number when ``signaled`` is true.
    var status: Int32
    /// Whether the child was ended by a signal (including the kill at the deadline).
    var signaled: Bool
    /// Whether the deadline passed and the child was killed.
    var timedOut: Bool
    var standardOutput: String
    var standardError: String

    /// True when the child exited normally with status 0.
    var succeeded: Bool { !signaled && status == 0 }
  }

  let process = Process()
  private let outputDirectory: TemporaryDirectory
  let command: String

  /// Starts `executable` with `arguments` and returns at once.
  /// - Parameters:
  ///   - executable: an absolute path, or a name looked up on `PATH`.
  ///   - input: bytes fed to standard input (nothing, i.e. `/dev/null`, by default).
  ///   - environment: replaces the environment when given; inherited otherwise.
  init(_ executable: String, _ arguments: [String], input: String? = nil, environment: [String: String]? = nil) throws {
    guard let path = executable.hasPrefix("/") ? executable : ChildProcess.find(executable) else {
      throw ChildProcessError.notFound(executable)
    }
    command = ([path] + arguments).joined(separator: " ")
    outputDirectory = try TemporaryDirectory()
    _ = FileManager.default.createFile(atPath: outputDirectory.file("stdout"), contents: nil)
    _ = FileManager.default.createFile(atPath: outputDirectory.file("stderr"), contents: nil)
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    if let environment { process.environment = environment }
    process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: outputDirectory.file("stdout")))
    process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: outputDirectory.file("stderr")))
    if let input {
      let inputPath = outputDirectory.file("stdin")
      _ = FileManager.default.createFile(atPath: inputPath, contents: Data(input.utf8))
      process.standardInput = try FileHandle(forReadingFrom: URL(fileURLWithPath: inputPath))
    } else {
      process.standardInput = FileHandle.nullDevice
    }
    try process.run()
  }

  deinit {
    if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() }
    outputDirectory.remove()
  }

  /// Runs a command to completion, killing it (`SIGKILL`) if `deadline` passes first.
  static func run(
    _ executable: String, _ arguments: [String], input: String? = nil,
    environment: [String: String]? = nil, deadline: Duration = .seconds(60)
  ) throws -> Outcome {
    let child = try ChildProcess(executable, arguments, input: input, environment: environment)
    return child.wait(deadline: deadline)
  }

  /// Starts a command that runs alongside the test; see ``stop()``.
  static func start(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) throws -> ChildProcess {
    try ChildProcess(executable, arguments, environment: environment)
  }

  /// What the child has written to standard output so far.
  var standardOutput: String { read("stdout") }
  /// What the child has written to standard error so far.
  var standardError: String { read("stderr") }
  var isRunning: Bool { process.isRunning }

  /// Waits for the child to exit; kills it with `SIGKILL` once `deadline` has passed.
  func wait(deadline: Duration = .seconds(60)) -> Outcome {
    let finished = waitUntil(deadline: deadline) { !process.isRunning }
    if !finished { kill(process.processIdentifier, SIGKILL) }
    process.waitUntilExit()
    return Outcome(
      status: process.terminationStatus, signaled: process.terminationReason == .uncaughtSignal,
      timedOut: !finished, standardOutput: standardOutput, standardError: standardError)
  }

  /// Kills the child with `SIGKILL` (it gets no chance to clean up) and waits for it.
  @discardableResult
  func stop() -> Outcome {
    if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    return wait()
  }

  private func read(_ name: String) -> String {
    (try? String(contentsOfFile: outputDirectory.file(name), encoding: .utf8)) ?? ""
  }
}

extension ChildProcess {
  /// The first executable called `name` on `PATH`, or `nil`.
  static func find(_ name: String) -> String? {
    let searchPath = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
    for directory in searchPath.split(separator: ":") {
      let candidate = directory + "/" + name
      if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
    }
    for directory in ["/usr/sbin", "/sbin"] where FileManager.default.isExecutableFile(atPath: directory + "/" + name) {
      return directory + "/" + name
    }
    return nil
  }

  /// The directory holding the executables `swift build` made for this package (`ccsync`,
  /// `CCSyncTestHelper`): the directory of the running test binary. Under `swift test` on
  /// Linux that binary is `.build/<triple>/debug/ccsyncPackageTests.xctest`, so both
  /// `/proc/self/exe` and `Bundle.main.executablePath` lead there.
  static let builtProductsDirectory: String = {
    let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
      ?? Bundle.main.executablePath ?? CommandLine.arguments[0]
    return URL(fileURLWithPath: executable).deletingLastPathComponent().path
  }()

  /// The path of a product of this package, e.g. `builtExecutable("ccsync")`.
  /// - Throws: ``ChildProcessError/notBuilt(_:)`` when it is not there (run `swift build` first).
  static func builtExecutable(_ name: String) throws -> String {
    let path = builtProductsDirectory + "/" + name
    guard FileManager.default.isExecutableFile(atPath: path) else { throw ChildProcessError.notBuilt(path) }
    return path
  }
}

enum ChildProcessError: Error, CustomStringConvertible {
  case notFound(String)
  case notBuilt(String)

  var description: String {
    switch self {
    case .notFound(let name): return "'\(name)' not found on PATH"
    case .notBuilt(let path): return "'\(path)' is not built"
    }
  }
}

/// Polls `condition` every 5 ms until it holds or `deadline` has passed; returns whether it
/// held. Use it instead of a fixed sleep when waiting for another thread or process.
@discardableResult
func waitUntil(deadline: Duration = .seconds(10), _ condition: () throws -> Bool) rethrows -> Bool {
  let clock = ContinuousClock()
  let end = clock.now + deadline
  while true {
    if try condition() { return true }
    if clock.now >= end { return false }
    usleep(5_000)
  }
}
