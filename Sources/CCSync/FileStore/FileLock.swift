import CCSyncSystem

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
  /// Who holds the in-process gate: the thread that took the lock, or a handle's token.
  private let owner: UInt
  /// Set only once both the gate and the `flock` are taken. A class initialiser that throws
  /// after every stored property is set still runs `deinit`; the failure paths below undo
  /// their own steps, so `deinit` must not undo them a second time.
  private var isHeld = false

  /// Takes the lock for the data file at `resolvedPath`.
  ///
  /// The lock is on the lock file's inode, so it guards nothing once that file is removed or
  /// replaced (an `rm`, a cleaner ageing it out of /tmp): a newcomer opens a new lock file at
  /// the name and locks that. So after locking, the lock file must still be the one at the
  /// name; if it is not, the lock is let go and taken again on the file there now (all within
  /// `wait`). A lock file removed while its lock is held cannot be helped this way: the holder
  /// already holds it; hence the rule that lock files are never removed.
  /// - Throws: ``StoreError/lockUnavailable(path:)`` when `wait` runs out;
  ///   ``StoreError/missingDirectory(path:)`` when the file's directory does not exist;
  ///   ``StoreError/notRegularFile(path:kind:)`` when something other than a regular file
  ///   (a symlink, a FIFO, a directory) sits at the lock's name: it is never followed or used;
  ///   ``StoreError/system(_:)`` when the lock file cannot be opened or created, or with
  ///   `EDEADLK` when this thread holds the lock already and `wait` is `.forever` (see
  ///   ``heldByThisThread(_:)``).
  /// - Parameter owner: who holds the in-process gate (see ``ProcessLockGate/enter(exclusive:deadline:owner:)``).
  init(resolvedPath: String, exclusive: Bool, wait: ContentionWait, owner: UInt = ThreadIdentity.current) throws(StoreError) {
    lockPath = resolvedPath + ".lock"
    self.exclusive = exclusive
    self.owner = owner
    let deadline = wait.deadline
    while true {
      var (file, identity) = try FileLock.openLockFile(lockPath, dataFile: resolvedPath)
      let key = ProcessLockTable.Key(device: identity.device, inode: identity.inode)
      let gate = ProcessLockTable.shared.retain(key)
      switch gate.enter(exclusive: exclusive, deadline: deadline, owner: owner) {
      case .entered:
        break
      case .timedOut:
        ProcessLockTable.shared.release(key)
        throw .lockUnavailable(path: lockPath)
      case .heldByThisThread:
        ProcessLockTable.shared.release(key)
        throw FileLock.heldByThisThread(lockPath)
      }
      do {
        try FileLock.acquire(&file, exclusive: exclusive, deadline: deadline)
      } catch {
        gate.leave(exclusive: exclusive, owner: owner)
        ProcessLockTable.shared.release(key)
        throw error
      }
      if FileLock.isAtItsName(lockPath, identity: identity) {
        self.file = file
        gateKey = key
        self.gate = gate
        isHeld = true
        return
      }
      FileLock.letGo(file, gate: gate, key: key, exclusive: exclusive, owner: owner)
    }
  }

  /// The error for a lock this thread already holds in a way it would wait for for ever (an
  /// exclusive lock, or a shared one when it asks for an exclusive one, waiting `.forever`):
  /// locks are not reentrant, and waiting would hang the thread.
  static func heldByThisThread(_ lockPath: String) -> StoreError {
    .system(SystemError(code: ErrorNumber.wouldDeadlock.rawValue, operation: "lock (this thread holds it already; locks are not reentrant)", path: lockPath))
  }

  deinit { release() }

  /// Releases the lock (closing the lock file releases the `flock`). Idempotent.
  func release() {
    guard isHeld else { return }
    isHeld = false
    FileLock.letGo(file, gate: gate, key: gateKey, exclusive: exclusive, owner: owner)
  }

  /// Undoes a lock both of whose parts are held: the `flock` (closing the lock file releases
  /// it too) and the in-process gate.
  private static func letGo(_ file: OpenFile, gate: ProcessLockGate, key: ProcessLockTable.Key, exclusive: Bool, owner: UInt) {
    try? file.unlock()
    try? file.close()
    gate.leave(exclusive: exclusive, owner: owner)
    ProcessLockTable.shared.release(key)
  }

  /// Opens (or creates) the lock file and checks it is a regular file; returns it with its
  /// identity.
  private static func openLockFile(_ path: String, dataFile: String) throws(StoreError) -> (OpenFile, FileIdentity) {
    let file: OpenFile, status: FileStatus
    do {
      file = try openOrCreate(path)
      status = try file.status()
    } catch where error.isNoSuchFile {
      throw .missingDirectory(path: FilePath.directory(of: dataFile))
    } catch where error.errorNumber == .tooManySymbolicLinkLevels {
      // O_NOFOLLOW refused a symlink planted at the lock's name: name it as what it is.
      throw .notRegularFile(path: path, kind: (try? FileSystem.linkStatus(path))?.kind ?? .symbolicLink)
    } catch {
      throw .system(error)
    }
    guard status.kind == .regularFile else { throw .notRegularFile(path: path, kind: status.kind) }
    return (file, status.identity)
  }

  /// Whether the file at `path` (not following a link) is still the one with `identity`:
  /// `false` when another file or nothing is there; `true` when it cannot be told (the name
  /// was just opened, so `lstat` should not fail otherwise), so that the caller never loops.
  private static func isAtItsName(_ path: String, identity: FileIdentity) -> Bool {
    do {
      guard let current = try FileSystem.linkStatus(path) else { return false }
      return current.identity.device == identity.device && current.identity.inode == identity.inode
    } catch {
      return true
    }
  }

  private static func openOrCreate(_ path: String) throws(SystemError) -> OpenFile {
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
  ///
  /// The lock file is open read-only (a descriptor open for writing would wake every watcher
  /// of the directory at each close). NFS emulates `flock` with whole-file `fcntl` locks,
  /// and an exclusive one needs a descriptor open for writing: the lock is refused with
  /// `EBADF` (flock(2), "NFS details"). Then `file` becomes the same file opened read-write,
  /// as flock(1) does.
  private static func acquire(_ file: inout OpenFile, exclusive: Bool, deadline: ContinuousClock.Instant?) throws(StoreError) {
    let acquired: Bool
    do {
      do {
        acquired = try lock(file, exclusive: exclusive, before: deadline)
      } catch where error.errorNumber == .badFileDescriptor && exclusive {
        let writable = try OpenFile(reopening: file, options: .readWriteNonBlocking)
        try? file.close()
        file = writable
        acquired = try lock(file, exclusive: exclusive, before: deadline)
      }
    } catch {
      throw .system(error)
    }
    if !acquired { throw .lockUnavailable(path: file.path) }
  }

  private static func lock(_ file: OpenFile, exclusive: Bool, before deadline: ContinuousClock.Instant?) throws(SystemError) -> Bool {
    guard let deadline else { return try file.lock(exclusive: exclusive, nonBlocking: false) }
    var pause = Duration.microseconds(100)
    while try !file.lock(exclusive: exclusive, nonBlocking: true) {
      let now = ContinuousClock.now
      if now >= deadline { return false }
      ContinuousClock.sleepThread(for: min(pause, deadline - now))
      pause = min(pause * 2, .milliseconds(10))
    }
    return true
  }
}
