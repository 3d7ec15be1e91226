import Foundation

/// What the child processes `bench/run` spawns have in common: unbuffered lines to the
/// driver, and how they fail (their time stamps are `MachineStamp`s).
///
/// Every worker prints `ready` once set up and then works only when the driver sends it a
/// line, so that the driver starts the clock when all workers of a trial can start at once
/// (process start-up and runtime initialisation stay out of the figures); it prints `done`
/// when that work is done.
enum BenchmarkProcess {
  /// Writes `line` and a newline to standard output at once, unbuffered (the driver reads
  /// it through a pipe).
  static func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
  }

  /// Reports `message` on standard error and exits with status `code`.
  static func fail(_ message: String, code: Int32 = 1) -> Never {
    FileHandle.standardError.write(Data("ccsync-bench: \(message)\n".utf8))
    exit(code)
  }

  /// The value following `option` in `arguments`, if present.
  static func option(_ option: String, in arguments: [String]) -> String? {
    guard let position = arguments.firstIndex(of: option), position + 1 < arguments.count else { return nil }
    return arguments[position + 1]
  }
}
