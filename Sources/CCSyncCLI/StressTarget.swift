import CCSync
import CCSyncProcesses

/// What a stress worker works on: the document (shared by the threads of a process, so
/// their writes are grouped by the library's group commit), or the file's lock, or etcd's.
/// `Sendable`: immutable; the document and the file are.
final class StressTarget: Sendable {
  let address: DocumentAddress
  let path: JSONPath
  let pathText: String
  let document: SharedDocument
  let file: SharedFile?

  init(address: DocumentAddress, path: JSONPath, pathText: String, relaxed: Bool) {
    self.address = address
    self.path = path
    self.pathText = pathText
    switch address {
    case .file(let name):
      let file = SharedFile(path: name, durable: !relaxed)
      self.file = file
      document = SharedDocument(file: file)
    case .etcd:
      file = nil
      document = address.document()
    }
  }

  /// One exact increment through `SharedDocument.update`; the lock is held from its body's
  /// start (the attempt that counted, over etcd) to its return.
  func increment(iteration: Int64, hold: Duration) throws -> StressSample {
    let requested = MachineStamp.now()
    var attempts: Int64 = 0
    var acquired: Int64 = 0
    var read: Int64 = 0
    var wrote: Int64 = 0
    try document.update(invalidFile: .fail) { value in
      attempts += 1
      acquired = MachineStamp.now()
      let current = try value.value(at: path)
      guard let number = current == nil ? 0 : current?.numberValue?.int64Value else {
        throw CommandFailure(ExitCode.dataError, "'\(pathText)' in '\(address.name)' is not an integer")
      }
      let (next, overflow) = number.addingReportingOverflow(1)
      if overflow { throw CommandFailure(ExitCode.dataError, "'\(pathText)' in '\(address.name)' is at the largest integer, \(number)") }
      ContinuousClock.sleepThread(for: hold)
      try value.setValue(.number(JSONNumber(next)), at: path)
      read = number
      wrote = next
    }
    return StressSample(
      iteration: iteration, kind: .write, retries: max(0, attempts - 1), requested: requested, acquired: acquired,
      released: MachineStamp.now(), read: read, wrote: wrote)
  }

  /// One read of the file under its shared lock.
  func read(iteration: Int64, hold: Duration) throws -> StressSample {
    guard let file else { throw CommandFailure(ExitCode.usage, "--shared needs a file") }
    let requested = MachineStamp.now()
    var acquired: Int64 = 0
    var released: Int64 = 0
    try file.withLock(exclusive: false) {
      acquired = MachineStamp.now()
      _ = try file.read()
      ContinuousClock.sleepThread(for: hold)
      released = MachineStamp.now()
    }
    return StressSample(iteration: iteration, kind: .read, requested: requested, acquired: acquired, released: released)
  }

  /// The lock alone: the file's (exclusive or shared), or etcd's lock named by the key,
  /// through `locker`.
  func lock(exclusive: Bool, iteration: Int64, hold: Duration, locker: EtcdLocker?) throws -> StressSample {
    let requested = MachineStamp.now()
    var acquired: Int64 = 0
    var released: Int64 = 0
    switch address {
    case .file:
      try file?.withLock(exclusive: exclusive) {
        acquired = MachineStamp.now()
        ContinuousClock.sleepThread(for: hold)
        released = MachineStamp.now()
      }
    case .etcd(let location):
      guard let locker else { throw CommandFailure(ExitCode.usage, "no client for etcd's lock '\(location.description)'") }
      let held = try locker.acquire(wait: .forever)
      acquired = MachineStamp.now()
      ContinuousClock.sleepThread(for: hold)
      released = MachineStamp.now()
      held.release()
    }
    return StressSample(
      iteration: iteration, kind: exclusive ? .exclusiveLock : .sharedLock, requested: requested, acquired: acquired,
      released: released)
  }
}
