import CCSync
import CCSyncProcesses

/// `lock-holder`: takes and releases the library's locks as told by lines on standard input,
/// one reply line each, so that tests can make two processes contend for a lock:
///
/// - `file PATH exclusive|shared WAIT` takes the file's lock: `held`, or `unavailable LOCKPATH`.
/// - `etcd URL TTL WAIT` takes etcd's lock: `held KEY TOKEN LEASE`, or `unavailable HOLDER`;
///   `lost REASON` follows, unasked, if its lease is lost.
/// - `release` releases what is held: `released`.
///
/// WAIT is `nonblock`, `forever` or seconds. Any other failure replies `error MESSAGE`.
func runLockHolder(_ arguments: [String]) -> Int32 {
  var fileLock: FileDocumentLock?
  var etcdLock: HeldEtcdLock?
  StandardStreams.writeLine("ready")
  while let line = readLine() {
    let words = line.split(separator: " ").map(String.init)
    do {
      switch words.first {
      case "file" where words.count == 4:
        fileLock = try SharedFile(path: words[1]).lock(exclusive: words[2] == "exclusive", wait: lockWait(words[3]))
        StandardStreams.writeLine("held")
      case "etcd" where words.count == 4:
        let locker = try EtcdLocker(location: try EtcdLocation(url: words[1]), ttl: Int64(words[2]) ?? 10)
        let held = try locker.acquire(wait: lockWait(words[3]))
        held.lease.onLoss { reason in StandardStreams.writeLine("lost \(reason)") }
        etcdLock = held
        StandardStreams.writeLine("held \(held.key) \(held.fencingToken) \(held.lease.leaseName)")
      case "release":
        fileLock?.release()
        etcdLock?.release()
        fileLock = nil
        etcdLock = nil
        StandardStreams.writeLine("released")
      default:
        StandardStreams.writeLine("error unknown command '\(line)'")
      }
    } catch StoreError.lockUnavailable(let path) {
      StandardStreams.writeLine("unavailable \(path)")
    } catch {
      StandardStreams.writeLine("error \(error)")
    }
  }
  return 0
}

private func lockWait(_ text: String) -> ContentionWait {
  switch text {
  case "nonblock": return .nonBlocking
  case "forever": return .forever
  default: return .timeout(.milliseconds(Int64((Double(text) ?? 0) * 1000)))
  }
}
