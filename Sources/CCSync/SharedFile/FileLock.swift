/// A held lock on a data file: the in-process gate plus `flock(2)` on the sidecar lock file
/// `NAME.lock` beside the (resolved) data file.
///
/// The lock file is opened with `O_NOFOLLOW`, never truncated, never deleted or renamed; the data
/// file itself is never locked, because a rename-replace swaps its inode out from under a lock.
/// The lock is released by ``release()`` or when the value is deinitialised. Not `Sendable`:
/// the thread that took it releases it.
final class FileLock {
  let lockPath: String
  let exclusive: Bool
  private let file: OpenFile
  private let gateKey: ProcessLockTable.Key
  private let gate: ProcessLockGate
  /// Set only once both the gate and the `flock` are taken. A class initialiser that throws
  /// after every stored property is set still runs `deinit`; the failure paths below undo
  /// their own steps, so `deinit` must not undo them a second time.
  private var isHeld = false

  /// Takes the lock for the data file at `resolvedPath`.
  /// - Throws: ``StorageError/lockUnavailable(path:)`` when `wait` runs out;
  ///   ``StorageError/missingDirectory(path:)`` when the file's directory does not exist;
  ///   ``StorageError/notRegularFile(path:kind:)`` when something other than a regular file
  ///   (a symlink, a FIFO, a directory) sits at the lock's name: it is never followed or used;
  ///   ``StorageError/system(_:)`` when the lock file cannot be opened or created.
  init(resolvedPath: String, exclusive: Bool, wait: LockWait) throws(StorageError) {
    lockPath = resolvedPath + ".lock"
    self.exclusive = exclusive
    let deadline = wait.deadline
    let status: FileStatus
    do {
      file = try FileLock.openLockFile(lockPath)
      status = try file.status()
    } catch where error.isNoSuchFile {
      throw .missingDirectory(path: FilePath.directory(of: resolvedPath))
    } catch where error.errorNumber == .tooManySymbolicLinkLevels {
      // O_NOFOLLOW refused a symlink planted at the lock's name: name it as what it is.
      throw .notRegularFile(path: lockPath, kind: (try? FileSystem.linkStatus(lockPath))?.kind ?? .symbolicLink)
    } catch {
      throw .system(error)
    }
    guard status.kind == .regularFile else { throw .notRegularFile(path: lockPath, kind: status.kind) }
    gateKey = ProcessLockTable.Key(device: status.identity.device, inode: status.identity.inode)
    gate = ProcessLockTable.shared.retain(gateKey)
    guard gate.enter(exclusive: exclusive, deadline: deadline) else {
      ProcessLockTable.shared.release(gateKey)
      throw .lockUnavailable(path: lockPath)
    }
    do {
      try FileLock.acquire(file, exclusive: exclusive, deadline: deadline)
    } catch {
      gate.leave(exclusive: exclusive)
      ProcessLockTable.shared.release(gateKey)
      throw error
    }
    isHeld = true
  }

  deinit { release() }

  /// Releases the lock (closing the lock file releases the `flock`). Idempotent.
  func release() {
    guard isHeld else { return }
    isHeld = false
    try? file.unlock()
    try? file.close()
    gate.leave(exclusive: exclusive)
    ProcessLockTable.shared.release(gateKey)
  }

  private static func openLockFile(_ path: String) throws(SystemError) -> OpenFile {
    do {
      return try OpenFile(path: path, options: .lockFile)
    } catch where error.isPermissionDenied {
      // A reader in a directory it may not write can still lock an existing lock file.
      // When there is none, the refusal to create it is the error worth reporting.
      let refusal = error
      do {
        return try OpenFile(path: path, options: .existingLockFile)
      } catch where error.isNoSuchFile {
        throw refusal
      }
    }
  }

  /// `flock` has no timeout: without a deadline it blocks; with one it retries without
  /// blocking, backing off from 0.1 ms to 10 ms, until the deadline.
  private static func acquire(_ file: OpenFile, exclusive: Bool, deadline: Int64?) throws(StorageError) {
    let acquired: Bool
    do {
      acquired = try lock(file, exclusive: exclusive, before: deadline)
    } catch {
      throw .system(error)
    }
    if !acquired { throw .lockUnavailable(path: file.path) }
  }

  private static func lock(_ file: OpenFile, exclusive: Bool, before deadline: Int64?) throws(SystemError) -> Bool {
    guard let deadline else { return try file.lock(exclusive: exclusive, nonBlocking: false) }
    var pause: Int64 = 100_000
    while try !file.lock(exclusive: exclusive, nonBlocking: true) {
      let now = FileSystem.monotonicNanoseconds()
      if now >= deadline { return false }
      FileSystem.sleep(nanoseconds: min(pause, deadline - now))
      pause = min(pause * 2, 10_000_000)
    }
    return true
  }
}
