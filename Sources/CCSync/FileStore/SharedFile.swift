import CCSyncSystem
import CCSyncJSON
import Synchronization

/// One shared file on disk: read it with its identity, lock it, and replace it atomically
/// and durably, by the rules of docs/ARCHITECTURE.md, "Writing".
///
/// The path may be a symlink (or a chain of them): reads and writes go through to the target,
/// the link stays a link, and the lock file sits beside the target. The path is resolved
/// anew on every operation, so a retargeted link is followed.
///
/// A file with several hard links is still replaced by rename, never written in place (an
/// in-place write can be torn by a crash): this name gets the new version and the other
/// links keep the old content. The logger gets a warning saying so, once per `SharedFile`.
///
/// `Sendable`: immutable apart from the warn-once flag, which is `Atomic`.
public final class SharedFile: Sendable {
  /// The path as given.
  public let path: String
  /// Whether writes `fsync` the file and its directory (the default). Relaxed writes are
  /// still atomic (readers see the old or the new bytes) but may be lost in a power failure.
  public let isDurable: Bool
  /// Where warnings go (a hard link that a save splits off).
  public let logger: DiagnosticLog
  private let warnedAboutHardLinks = Atomic<Bool>(false)
  /// The names the last write worked with, and the instant before which this process
  /// need not look for the target's leftover temp files again (see
  /// ``atomicReplace(target:original:)``).
  private let lastReplacement = Protected<(names: ReplacementNames, nextLeftoverSweep: ContinuousClock.Instant)?>(nil)

  /// Creates a handle for `path`; nothing is opened until an operation needs it.
  public init(path: String, durable: Bool = true, logger: DiagnosticLog = .standardError) {
    self.path = path
    isDurable = durable
    self.logger = logger
  }

  /// The path with every symlink in its last component followed: the file that reads and
  /// writes reach. Directories on the path are left as written.
  ///
  /// Like the kernel's `fs.protected_symlinks`, which our own resolution would otherwise
  /// bypass, a symlink in a world-writable sticky directory (`/tmp`) is followed only when
  /// it belongs to this user or to the directory's owner: another user's link there could
  /// point a save at any file this process may write.
  /// - Throws: ``StoreError/symlinkLoop(path:)`` after 40 links;
  ///   ``StoreError/danglingSymlink(path:target:)`` when a link leads nowhere;
  ///   ``StoreError/notRegularFile(path:kind:)`` when it leads to a directory;
  ///   ``StoreError/system(_:)`` with `EACCES` for another user's link in a sticky directory,
  ///   `ENOENT` for an empty path and `EINVAL` for a path with a NUL byte.
  public func resolvedPath() throws(StoreError) -> String {
    try withSystemErrors { () throws(SystemError) in try FileSystem.checkPath(path) }
    var current = path
    for _ in 0..<40 {
      let status = try withSystemErrors { () throws(SystemError) in try FileSystem.linkStatus(current) }
      guard let status, status.kind == .symbolicLink else {
        if status == nil && current != path { throw .danglingSymlink(path: path, target: current) }
        // A directory is never a data file: refusing it here keeps a lock file from being
        // made inside it (`dir/` would lock `dir/.lock`) or beside `/`.
        if status?.kind == .directory { throw .notRegularFile(path: path, kind: .directory) }
        return current
      }
      try withSystemErrors { () throws(SystemError) in try FileSystem.checkSymlinkMayBeFollowed(current, owner: status.owner) }
      let target = try withSystemErrors { () throws(SystemError) in try symbolicLinkTarget(atPath: current) }
      current = target.hasPrefix("/") ? target : FilePath.directory(of: current) + "/" + target
    }
    throw .symlinkLoop(path: path)
  }

  /// The lock file every writer of this file takes: `NAME.lock` beside the resolved file.
  public func lockPath() throws(StoreError) -> String {
    try resolvedPath() + ".lock"
  }

  /// The file's identity now, or `nil` when it does not exist.
  public func identity() throws(StoreError) -> FileIdentity? {
    try withSystemErrors { () throws(SystemError) in
      try FileSystem.checkPath(path)
      return try FileSystem.status(path)
    }?.identity
  }

  /// Reads the whole file with the identity of the version read, or `nil` when the file does
  /// not exist. Never blocks on a FIFO.
  /// - Throws: ``StoreError/notRegularFile(path:kind:)`` for a directory, FIFO or device;
  ///   symlink errors as ``resolvedPath()``; ``StoreError/system(_:)`` for I/O errors.
  public func read() throws(StoreError) -> FileSnapshot? {
    // The common case, a path that is no symlink, opens at once (without O_NOFOLLOW it could
    // follow a link unchecked); only a symlink goes through `resolvedPath()` and its checks.
    try withSystemErrors { () throws(SystemError) in try FileSystem.checkPath(path) }
    do {
      return try read(target: path, options: .readOnlyNonBlockingNoFollow)
    } catch .system(let error) where error.errorNumber == .tooManySymbolicLinkLevels {
      return try read(target: try resolvedPath())
    }
  }

  /// Reads the resolved file `target`; with a `handoff`, a successful read leaves the file open
  /// in it for the write that follows under the same lock.
  func read(
    target: String, options: OpenFile.Options = .readOnlyNonBlocking, handoff: ReadHandoff? = nil
  ) throws(StoreError) -> FileSnapshot? {
    let file: OpenFile
    do {
      file = try OpenFile(path: target, options: options)
    } catch where error.isNoSuchFile {
      return nil
    } catch {
      throw .system(error)
    }
    let (snapshot, status) = try read(file)
    handoff?.keep(file, status: status)
    return snapshot
  }

  /// The largest document a reader reads: 256 MiB, far above any configuration, or
  /// `CCSYNC_MAX_DOCUMENT_SIZE` (bytes) when set. A larger file is refused before it is read
  /// (parsing takes about six times its size in memory).
  public static let maximumDocumentSize: Int64 = {
    if let text = Environment.value("CCSYNC_MAX_DOCUMENT_SIZE"), let bytes = Int64(text), bytes > 0 { return bytes }
    return 256 * 1024 * 1024
  }()

  /// Reads the whole of an open file, which must be a regular file, and returns it with the
  /// status `fstat` gave before the read.
  private func read(_ file: OpenFile) throws(StoreError) -> (FileSnapshot, FileStatus) {
    let status = try withSystemErrors { () throws(SystemError) in try file.status() }
    guard status.kind == .regularFile else { throw .notRegularFile(path: path, kind: status.kind) }
    let limit = SharedFile.maximumDocumentSize
    guard status.identity.size <= limit else { throw .documentTooLarge(path: path, size: status.identity.size, limit: limit) }
    let bytes = try withSystemErrors { () throws(SystemError) in try file.readRegularFile(size: Int(status.identity.size)) }
    return (FileSnapshot(bytes: bytes, identity: status.identity), status)
  }

  /// Runs `body` while holding this file's lock: exclusive for writers, shared for readers that
  /// must see one consistent version. A ``replaceContents(with:)`` in `body` finishes under the
  /// lock, its directory's `fsync` included.
  /// - Throws: ``StoreError/lockUnavailable(path:)`` when `wait` runs out, or what `body` throws.
  public func withLock<Result>(
    exclusive: Bool = true, wait: ContentionWait = .forever, _ body: () throws -> Result
  ) throws -> Result {
    try withLockedFile(exclusive: exclusive, wait: wait) { _ in try body() }
  }

  /// Runs `body` while holding this file's lock, with a ``LockedFile`` whose reads and writes
  /// go to the file the path led to when the lock was taken, so a symlink retargeted meanwhile
  /// cannot send a write to a file whose lock is not held.
  ///
  /// What a ``LockedFile/replaceContents(with:)`` leaves (the directory's `fsync`, closing the
  /// replaced version) is done after the lock is released and before this returns.
  /// - Throws: ``StoreError/lockUnavailable(path:)`` when `wait` runs out;
  ///   ``StoreError/missingDirectory(path:)``; ``StoreError/notDurable(path:_:)`` when the
  ///   directory's `fsync` after a replacement failed; or what `body` throws.
  public func withLockedFile<Result>(
    exclusive: Bool = true, wait: ContentionWait = .forever, _ body: (LockedFile) throws -> Result
  ) throws -> Result {
    let target = try resolvedPath()
    let handoff = ReadHandoff()
    let afterUnlock = AfterUnlock()
    let result: Result
    do {
      let lock = try FileLock(resolvedPath: target, exclusive: exclusive, wait: wait)
      defer { lock.release() }
      defer { handoff.closeRemaining() }  // before the lock is released: declared after it
      result = try body(LockedFile(file: self, target: target, handoff: handoff, afterUnlock: afterUnlock))
    } catch {
      try? afterUnlock.run()
      throw error
    }
    try afterUnlock.run()
    return result
  }

  /// Replaces the file's contents atomically (and durably unless relaxed): a temp file beside
  /// the target, created `O_EXCL|O_NOFOLLOW` with mode 0600, given the target's owner, group,
  /// mode and extended attributes, written in full, `fsync`ed, renamed over the target, and the
  /// directory `fsync`ed. Call it while holding the exclusive lock (``withLock(exclusive:wait:_:)``).
  ///
  /// A missing file is created as any new file is: mode 0666 less the umask, or the
  /// directory's default ACL where it has one (the temp file is then created with mode 0666,
  /// and the kernel applies either). On any failure the temp file is
  /// removed and the target is untouched; nothing is renamed after a failed `fsync`.
  /// - Returns: the identity of the new version.
  /// - Throws: ``StoreError/missingDirectory(path:)`` when the directory does not exist;
  ///   ``StoreError/notRegularFile(path:kind:)``; ``StoreError/system(_:)`` otherwise.
  @discardableResult
  public func replaceContents(with bytes: [UInt8]) throws(StoreError) -> FileIdentity {
    try atomicReplace(target: try resolvedPath()).write(bytes)
  }

  /// The replacement of the resolved file `target`. `original` is the target as a read under
  /// the same lock opened it (see ``ReadHandoff``); the caller closes it.
  func atomicReplace(target: String, original: ReadHandoff.OpenedVersion? = nil) -> AtomicReplace {
    let now = ContinuousClock.now
    let (names, sweepKnownNotDue) = lastReplacement.withLock { last in
      // Compared byte for byte: `String ==` would take canonically equivalent paths, which name
      // different files on Linux, for the same.
      guard let last, last.names.target.hasSameBytes(as: target) else {
        return (ReplacementNames(target: target), false)
      }
      return (last.names, now < last.nextLeftoverSweep)
    }
    var replace = AtomicReplace(names: names, displayPath: path, durable: isDurable)
    if sweepKnownNotDue {
      replace.sweepsLeftovers = false
    } else {
      let (isDue, nextDue) = replace.claimLeftoverSweep(now: now)
      replace.sweepsLeftovers = isDue
      lastReplacement.withLock { $0 = (names, nextDue) }
    }
    replace.openedOriginal = original
    replace.hardLinksNoticed = warnAboutHardLinks
    return replace
  }

  /// Warns, once per `SharedFile`, that a save splits the file off its other hard links.
  private func warnAboutHardLinks(_ links: UInt64) {
    guard !warnedAboutHardLinks.exchange(true, ordering: .relaxed) else { return }
    logger.log(.warning, "'\(path)' has \(links) hard links: a save replaces this name with a new file, "
      + "so the other \(links - 1) keep the old content")
  }

  /// Keeps a copy of `bytes` (a file's contents that are not valid JSON) as
  /// `NAME.corrupt-TIMESTAMP` beside the resolved file, before anything replaces them.
  /// - Returns: the path of the copy.
  @discardableResult
  public func preserveCorruptCopy(of bytes: [UInt8]) throws(StoreError) -> String {
    try preserveCorruptCopy(target: try resolvedPath(), of: bytes)
  }

  func preserveCorruptCopy(target: String, of bytes: [UInt8]) throws(StoreError) -> String {
    try keepCopy(target: target, of: bytes, label: "corrupt")
  }

  /// Keeps `bytes` as `NAME.LABEL-TIMESTAMP` beside the resolved file (a corrupt version, a
  /// version that lost a conflict), with the file's owner, group and mode.
  /// - Returns: the path of the copy.
  @discardableResult
  func keepCopy(of bytes: [UInt8], label: String) throws(StoreError) -> String {
    try keepCopy(target: try resolvedPath(), of: bytes, label: label)
  }

  private func keepCopy(target: String, of bytes: [UInt8], label: String) throws(StoreError) -> String {
    // Writers call this under the exclusive lock, so no other ccsync process picks a name at
    // the same time; a name already taken (same millisecond) gets a random suffix.
    let prefix = target + "." + label + "-"
    var copyPath = prefix + FileSystem.utcTimestampForFileName()
    while (try? FileSystem.linkStatus(copyPath)) != nil {
      copyPath = prefix + FileSystem.utcTimestampForFileName() + "-" + FileSystem.randomSuffix(length: 4)
    }
    try AtomicReplace(target: copyPath, displayPath: copyPath, durable: isDurable, inheritFrom: target).write(bytes)
    return copyPath
  }
}

/// One version of a file's contents with the identity it had when read. `Sendable`.
public struct FileSnapshot: Sendable, Equatable {
  public var bytes: [UInt8]
  public var identity: FileIdentity

  public init(bytes: [UInt8], identity: FileIdentity) {
    self.bytes = bytes
    self.identity = identity
  }
}

/// A shared file while its lock is held (see ``SharedFile/withLockedFile(exclusive:wait:_:)``):
/// every operation uses the target resolved when the lock was taken. Valid only inside the
/// closure. `Sendable`.
public struct LockedFile: Sendable {
  /// The shared file.
  public let file: SharedFile
  /// The resolved file the lock protects.
  public let target: String
  /// Where a read leaves the file open for the write after it.
  let handoff: ReadHandoff
  /// What a write leaves for after the lock is released.
  let afterUnlock: AfterUnlock

  /// Reads the file (see ``SharedFile/read()``). The file stays open until the next
  /// ``replaceContents(with:)`` or the end of the lock, whichever comes first.
  public func read() throws(StoreError) -> FileSnapshot? {
    try file.read(target: target, handoff: handoff)
  }

  /// Replaces the file's contents (see ``SharedFile/replaceContents(with:)``), inheriting the
  /// metadata from the file the last ``read()`` under this lock opened, if any.
  ///
  /// The new version is in place when it returns; closing the replaced version and, in durable
  /// mode, the directory's `fsync` wait until the lock is released (see ``AfterUnlock``), and
  /// ``SharedFile/withLockedFile(exclusive:wait:_:)`` returns only once they are done: it
  /// throws ``StoreError/notDurable(path:_:)`` when the `fsync` fails.
  @discardableResult
  public func replaceContents(with bytes: [UInt8]) throws(StoreError) -> FileIdentity {
    try replaceContents(with: bytes, keptByHistory: false)
  }

  /// ``replaceContents(with:)`` of a version the file's history has just linked (see
  /// ``FileHistory``): that link is not one of the hard links a save would split off.
  func replaceContents(with bytes: [UInt8], keptByHistory: Bool) throws(StoreError) -> FileIdentity {
    let original = handoff.take()
    if let original { afterUnlock.close(original.file) }
    var replace = file.atomicReplace(target: target, original: original)
    if keptByHistory { replace.expectedLinks = 2 }
    let renamed = try replace.writeAndRename(bytes)
    afterUnlock.makeDurable(renamed)
    return renamed.identity
  }

  /// In durable mode, makes the version the last ``read()`` under this lock found durable,
  /// for a commit that leaves it in place: its `fsync` and its directory's, after the lock is
  /// released (see ``AfterUnlock/makeDurable(version:in:displayPath:)``), and
  /// ``SharedFile/withLockedFile(exclusive:wait:_:)`` returns only once they are done; it throws
  /// ``StoreError/notDurable(path:_:)`` when one fails. Nothing to do in relaxed mode or
  /// when no read kept the file open (a missing file).
  func makeReadVersionDurable() {
    guard file.isDurable, let version = handoff.take() else { return }
    afterUnlock.makeDurable(version: version.file, in: FilePath.directory(of: target), displayPath: file.path)
  }

  /// Keeps invalid bytes in `NAME.corrupt-TIMESTAMP` (see ``SharedFile/preserveCorruptCopy(of:)``).
  @discardableResult
  public func preserveCorruptCopy(of bytes: [UInt8]) throws(StoreError) -> String {
    try file.preserveCorruptCopy(target: target, of: bytes)
  }
}
