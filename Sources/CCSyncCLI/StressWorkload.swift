import CCSync

/// What every worker of one `ccsync stress` run does, as the parent read it from its options
/// and passes it on to each `ccsync stress-runner` process.
struct StressWorkload: Sendable {
  /// What an operation is.
  enum Mode: String, Sendable {
    /// An exact read-modify-write increment (`SharedDocument.update`).
    case update
    /// The lock alone, held for `hold`, nothing written.
    case lock
  }

  /// When a worker thread stops.
  enum Length: Sendable, Equatable {
    /// After this many operations.
    case iterations(Int)
    /// At this `CLOCK_MONOTONIC` stamp (``MachineStamp``): no operation starts after it.
    case until(Int64)
  }

  var mode: Mode = .update
  var threads = 1
  var length: Length = .iterations(250)
  /// Time spent inside the lock per operation, as real work would.
  var hold: Duration = .zero
  /// The fraction of operations that are readers under the shared lock.
  var shared = 0.0
  /// No `fsync` (update mode on a file).
  var relaxed = false
  /// The seed of the choice between reader and writer; each thread derives its own.
  var seed: UInt64 = 1

  /// The arguments of a `ccsync stress-runner` process (its options; FILE and PATH follow).
  func runnerArguments(process: Int, samples directory: String) -> [String] {
    var arguments = [
      "--process", String(process), "--threads", String(threads), "--mode", mode.rawValue,
      "--hold", String(seconds(hold)), "--shared", String(shared), "--seed", String(seed),
      "--samples", directory,
    ]
    switch length {
    case .iterations(let count): arguments += ["--iterations", String(count)]
    case .until(let stamp): arguments += ["--until", String(stamp)]
    }
    if relaxed { arguments.append("--relaxed") }
    return arguments
  }
}
