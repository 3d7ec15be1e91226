import CCSync
import CCSyncProcesses

/// One operation of a stress worker, as it travels to `ccsync stress`: eight native 64-bit
/// integers (64 bytes), written in batches to a file per worker thread that the parent reads
/// as it grows. Stamps are `CLOCK_MONOTONIC` nanoseconds (``MachineStamp``), the one clock
/// every process of the machine shares, so holds of different processes can be compared.
struct StressSample: Equatable, Sendable {
  /// What the operation was.
  enum Kind: Int64, Sendable {
    /// An exact increment under the exclusive lock (or a compare-and-swap over etcd).
    case write = 0
    /// A read under the shared lock.
    case read = 1
    /// The exclusive lock alone.
    case exclusiveLock = 2
    /// The shared lock alone.
    case sharedLock = 3

    /// Whether the lock held was exclusive.
    var isExclusive: Bool { self == .write || self == .exclusiveLock }
  }

  var iteration: Int64
  var kind: Kind
  /// Attempts beyond the first (compare-and-swap retries over etcd; 0 on a file).
  var retries: Int64
  /// When the operation was asked for, when its lock was held (its body began), and when it
  /// was done (the write and its `fsync` included).
  var requested: Int64
  var acquired: Int64
  var released: Int64
  /// For a write: the value read and the value written.
  var read: Int64
  var wrote: Int64

  static let fieldCount = 8
  static let byteCount = fieldCount * 8

  /// The sample's fields in the file's order.
  var fields: [Int64] { [iteration, kind.rawValue, retries, requested, acquired, released, read, wrote] }

  init(
    iteration: Int64, kind: Kind, retries: Int64 = 0, requested: Int64, acquired: Int64, released: Int64,
    read: Int64 = 0, wrote: Int64 = 0
  ) {
    self.iteration = iteration
    self.kind = kind
    self.retries = retries
    self.requested = requested
    self.acquired = acquired
    self.released = released
    self.read = read
    self.wrote = wrote
  }

  /// A sample from its fields; `nil` for an unknown kind.
  init?(fields: ArraySlice<Int64>) {
    let values = Array(fields)
    guard values.count == StressSample.fieldCount, let kind = Kind(rawValue: values[1]) else { return nil }
    self.init(
      iteration: values[0], kind: kind, retries: values[2], requested: values[3], acquired: values[4], released: values[5],
      read: values[6], wrote: values[7])
  }

  /// The name of the samples file of thread `thread` of process `process` in the run's directory.
  static func fileName(process: Int, thread: Int) -> String { "p\(process)-t\(thread).samples" }
}

/// A worker thread's samples on their way to the parent: kept in memory and appended to its
/// file every 1,024 samples or quarter of a second, outside the lock, so measuring costs a
/// few stores per operation and a `write` now and then.
///
/// `@unchecked Sendable`: handed to the one thread that uses it when that thread starts, and
/// never touched by another.
final class StressSampleSink: @unchecked Sendable {
  private let file: FileDescriptor
  private var buffer: [Int64] = []
  private var lastFlush = ContinuousClock.now

  /// Creates the file at `path`, which must not exist.
  init(path: String) throws(SystemError) {
    file = try FileDescriptor.createNew(path, permissions: 0o600)
    buffer.reserveCapacity(1024 * StressSample.fieldCount)
  }

  /// Adds a sample; writes the batch when it is due.
  func add(_ sample: StressSample) throws(SystemError) {
    buffer += sample.fields
    if buffer.count >= 1024 * StressSample.fieldCount || ContinuousClock.now - lastFlush >= .milliseconds(250) {
      try flush()
    }
  }

  /// Writes what is buffered.
  func flush() throws(SystemError) {
    lastFlush = ContinuousClock.now
    guard !buffer.isEmpty else { return }
    let bytes = buffer.withUnsafeBytes { Array($0) }
    buffer.removeAll(keepingCapacity: true)
    try file.writeAll(bytes)
  }
}

/// The parent's side: reads a samples file as it grows, keeping a partial sample for the
/// next read.
final class StressSampleReader {
  let process: Int
  let thread: Int
  private let path: String
  private var file: FileDescriptor?
  private var pending: [UInt8] = []
  private(set) var samples: [StressSample] = []

  init(path: String, process: Int, thread: Int) {
    self.path = path
    self.process = process
    self.thread = thread
  }

  /// Reads what was added since the last call.
  /// - Returns: the samples that arrived.
  @discardableResult
  func readNew() throws(SystemError) -> ArraySlice<StressSample> {
    if file == nil {
      guard FileTree.exists(path) else { return [] }
      file = try FileDescriptor.openForReading(path)
    }
    guard let file else { return [] }
    let before = samples.count
    while case .bytes(let bytes) = try file.readOnce(maximum: 1 << 20) { pending += bytes }
    let whole = pending.count / StressSample.byteCount * StressSample.byteCount
    if whole > 0 {
      let values: [Int64] = pending.withUnsafeBytes { raw in
        (0..<whole / 8).map { raw.loadUnaligned(fromByteOffset: $0 * 8, as: Int64.self) }
      }
      pending.removeFirst(whole)
      var index = 0
      while index < values.count {
        if let sample = StressSample(fields: values[index..<index + StressSample.fieldCount]) { samples.append(sample) }
        index += StressSample.fieldCount
      }
    }
    return samples[before...]
  }
}
