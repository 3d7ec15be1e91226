import CCSync
import Glibc

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
    let pid: pid_t
    let startTime: Double
    private let output: Int32
    private let errors: Int32

    init(pid: pid_t, output: Int32, errors: Int32) {
      self.pid = pid
      self.output = output
      self.errors = errors
      startTime = ProcessControl.now()
    }

    deinit {
      close(output)
      close(errors)
    }

    func wait() -> Outcome {
      finished(status: ProcessControl.waitForExit(pid))
    }

    /// The outcome of the process once it has been reaped with `status`.
    func finished(status: Int32) -> Outcome {
      let seconds = ProcessControl.now() - startTime
      return Outcome(status: status, output: DemoProcess.contents(of: output), errors: DemoProcess.contents(of: errors), seconds: seconds)
    }
  }

  static func start(_ arguments: [String]) throws -> Started {
    let output = try ProcessControl.inputFile([])
    let errors = try ProcessControl.inputFile([])
    do {
      let pid = try ProcessControl.spawn(
        [ProcessControl.executablePath] + arguments, standardOutput: output, standardError: errors)
      return Started(pid: pid, output: output, errors: errors)
    } catch {
      close(output)
      close(errors)
      throw CommandFailure(error.exitCode, error.description)
    }
  }

  /// Everything written to the file behind `descriptor`, from its start.
  static func contents(of descriptor: Int32) -> String {
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    var offset: off_t = 0
    while true {
      let count = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, offset) }
      if count <= 0 { break }
      bytes += buffer[..<count]
      offset += off_t(count)
    }
    return String(decoding: bytes, as: UTF8.self)
  }
}

/// A long-running `ccsync watch` whose standard output the demo reads line by line.
final class DemoWatcher {
  let pid: pid_t
  private let output: Int32
  private var partial: [UInt8] = []
  /// The lines so far, with the time each arrived (monotonic seconds).
  private(set) var lines: [(text: String, time: Double)] = []

  init(_ arguments: [String]) throws {
    let pipe = ProcessControl.makePipe(nonBlockingRead: true)
    defer { close(pipe.write) }
    do {
      pid = try ProcessControl.spawn([ProcessControl.executablePath] + arguments, standardOutput: pipe.write)
    } catch {
      close(pipe.read)
      throw CommandFailure(error.exitCode, error.description)
    }
    output = pipe.read
  }

  deinit { close(output) }

  /// Reads what has arrived, waiting up to `timeout` seconds for `condition` to hold.
  /// - Returns: whether it held.
  @discardableResult
  func waitFor(timeout: Double, _ condition: ([String]) -> Bool) -> Bool {
    let deadline = ProcessControl.now() + timeout
    while true {
      readAvailable()
      if condition(lines.map(\.text)) { return true }
      let left = deadline - ProcessControl.now()
      if left <= 0 { return false }
      _ = ProcessControl.waitForInput([output], timeout: min(left, 0.05))
    }
  }

  private func readAvailable() {
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
      let count = buffer.withUnsafeMutableBytes { read(output, $0.baseAddress, $0.count) }
      if count <= 0 { break }
      partial += buffer[..<count]
    }
    let now = ProcessControl.now()
    while let newline = partial.firstIndex(of: UInt8(ascii: "\n")) {
      lines.append((String(decoding: partial[..<newline], as: UTF8.self), now))
      partial.removeSubrange(...newline)
    }
  }

  /// Sends SIGTERM and returns the exit status.
  func stop() -> Int32 {
    ProcessControl.signal(pid, SIGTERM)
    return ProcessControl.waitForExit(pid)
  }
}

/// A directory made with `mkdtemp` and removed with its files.
struct DemoDirectory {
  let path: String

  init() throws(SystemError) {
    let base = getenv("TMPDIR").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
    var template = Array((base + "/ccsync-demo-XXXXXX").utf8CString)
    guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else {
      throw SystemError(code: errno, operation: "create directory", path: base + "/ccsync-demo-XXXXXX")
    }
    path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  /// Removes the files in the directory (the demo makes no subdirectories), then the directory.
  func remove() {
    if let stream = opendir(path) {
      while let entry = readdir(stream) {
        let name = withUnsafePointer(to: entry.pointee.d_name) { pointer in
          pointer.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
        }
        if name != "." && name != ".." { unlink(path + "/" + name) }
      }
      closedir(stream)
    }
    rmdir(path)
  }
}
