import CCSyncSystem

/// One atomic, durable replacement of a file's contents: the temp-file-fsync-rename protocol.
///
/// Steps, each of which removes the temp file and leaves the target untouched on failure:
/// 1. create `.NAME.tmp-XXXXXXXX` beside the target with `O_CREAT|O_EXCL|O_NOFOLLOW`, mode 0600;
/// 2. give it the target's owner and group, then its mode and extended attributes (ACLs), so
///    that the single `fsync` below makes data and metadata durable together;
/// 3. write every byte; 4. `fsync` (durable mode); 5. `rename` over the target;
/// 6. `fsync` the directory (durable mode). A write under the lock does step 6 after the lock
/// is released (see ``AfterUnlock``).
///
/// Before step 1 it refuses a target this process may not write itself (see
/// ``checkTargetWritable()``) and removes temp files that writers killed mid-save left behind
/// (see ``removeLeftoverTemporaryFiles(directory:name:)`` and ``claimLeftoverSweep(now:)``).
/// While its temp file exists, the writer holds a `flock` on it: that is how a later writer
/// tells a leftover from a file a live writer is still writing. A failure after the rename (the directory `fsync`) is
/// reported as ``StoreError/notDurable(path:_:)``: the new version is already in place, its
/// durability unknown.
struct AtomicReplace {
  /// The file to replace (symlinks already resolved), with its directory and temp-file names.
  var names: ReplacementNames
  /// The file to replace (symlinks already resolved).
  var target: String { names.target }
  /// The path to name in error messages (as the user gave it).
  var displayPath: String
  var durable: Bool
  /// Where owner, group, mode and attributes come from; the target itself by default.
  var inheritFrom: String?
  /// The target as a read under the same lock already opened it (see ``ReadHandoff``): its
  /// descriptor and status stand in for opening the target again. The caller closes it.
  /// `nil`: the target is opened here, as for a write that no read preceded. Never set
  /// together with ``inheritFrom``.
  var openedOriginal: ReadHandoff.OpenedVersion?
  /// Called with the link count when the target has other hard links, which keep the old
  /// content once the new version is renamed over this one.
  var hardLinksNoticed: ((UInt64) -> Void)?
  /// The links the original is known to have: 1, or 2 while the file's history keeps it.
  var expectedLinks: UInt64 = 1
  /// Makes the random part of temp file names (tests substitute names that already exist).
  var makeSuffix: () -> String = { FileSystem.randomSuffix(length: AtomicReplace.suffixLength) }
  /// Whether this write first looks for leftover temp files; `nil`: when this process has not
  /// looked for the target's within ``leftoverSweepInterval`` (see
  /// ``claimLeftoverSweep(now:)``). A ``SharedFile`` decides it for its writes (it can tell
  /// cheaply when no look is due).
  var sweepsLeftovers: Bool?

  init(target: String, displayPath: String, durable: Bool, inheritFrom: String? = nil) {
    self.init(names: ReplacementNames(target: target), displayPath: displayPath, durable: durable, inheritFrom: inheritFrom)
  }

  init(names: ReplacementNames, displayPath: String, durable: Bool, inheritFrom: String? = nil) {
    self.names = names
    self.displayPath = displayPath
    self.durable = durable
    self.inheritFrom = inheritFrom
  }

  /// Letters and digits after the prefix in a temp file's name.
  static let suffixLength = 8

  /// Prefix of temp file names: readers and watchers ignore names that start with it.
  static func temporaryPrefix(forName name: String) -> String { "." + name + ".tmp-" }

  /// A replacement whose rename is done: what is left is the directory's `fsync` (durable
  /// mode), which a write under the lock leaves for after the lock's release (``AfterUnlock``).
  struct Renamed: Sendable {
    /// The identity of the new version.
    let identity: FileIdentity
    /// The directory whose `fsync` makes the rename durable; `nil` in relaxed mode.
    let directoryToSynchronize: String?
    /// The path to name in error messages.
    let displayPath: String

    /// Makes the rename durable (nothing to do in relaxed mode).
    /// - Throws: ``StoreError/notDurable(path:_:)``: the new version is in place, its
    ///   durability unknown.
    func makeDurable() throws(StoreError) {
      guard let directoryToSynchronize else { return }
      do {
        try FileSystem.synchronizeDirectory(directoryToSynchronize)
      } catch {
        throw .notDurable(path: displayPath, error)
      }
    }
  }

  /// The whole replacement, the directory's `fsync` included.
  @discardableResult
  func write(_ bytes: [UInt8]) throws(StoreError) -> FileIdentity {
    let renamed = try writeAndRename(bytes)
    try renamed.makeDurable()
    return renamed.identity
  }

  /// Steps 1 to 5: the new version is in place when it returns; the caller makes it durable.
  func writeAndRename(_ bytes: [UInt8]) throws(StoreError) -> Renamed {
    let directory = names.directory
    let original: (file: OpenFile?, status: FileStatus)?
    if let openedOriginal {
      // Looked at again: the metadata the new version inherits is the file's as it is now,
      // so a chmod or chown made while the update ran (the read was earlier) is kept.
      let status = (try? openedOriginal.file.status()) ?? openedOriginal.status
      original = (openedOriginal.file, status)
    } else {
      original = try originalFile()
    }
    if let original, original.status.kind != .regularFile {
      throw .notRegularFile(path: displayPath, kind: original.status.kind)
    }
    if original != nil && inheritFrom == nil {
      try checkTargetWritable()
      if let links = original?.status.linkCount, links > expectedLinks { hardLinksNoticed?(links - (expectedLinks - 1)) }
    }
    if sweepsLeftovers ?? claimLeftoverSweep(now: .now).isDue {
      removeLeftoverTemporaryFiles(directory: directory, name: names.name)
    }
    // A new file is created with 0666, from which the kernel takes the umask or, where the
    // directory has one, its default ACL, as for any new file; a replacement starts private.
    let (temporary, temporaryPath) = try createTemporary(mode: original == nil ? 0o666 : 0o600)
    // The mark of a live writer: a leftover nobody holds a lock on is one whose writer is gone.
    _ = try? temporary.lock(exclusive: true, nonBlocking: true)
    do {
      try inheritMetadata(from: original, onto: temporary)
      try temporary.writeAll(bytes)
      if durable { try temporary.synchronize() }
      try FileSystem.rename(temporaryPath, to: target)
    } catch {
      try? temporary.close()
      try? FileSystem.removeFile(temporaryPath)
      throw .system(error)
    }
    // Renamed: the new version is in place. What follows can still fail, and is reported as
    // such, but nothing is left to clean up.
    do {
      let identity = try temporary.status().identity
      try temporary.close()
      return Renamed(identity: identity, directoryToSynchronize: durable ? directory : nil, displayPath: displayPath)
    } catch {
      throw .notDurable(path: displayPath, error)
    }
  }

  /// The file whose metadata the new version inherits, open for reading its attributes
  /// (`nil` when it is not readable), or `nil` when it does not exist.
  private func originalFile() throws(StoreError) -> (file: OpenFile?, status: FileStatus)? {
    let source = inheritFrom ?? target
    do {
      let file = try OpenFile(path: source, options: .readOnlyNonBlocking)
      return (file, try file.status())
    } catch where error.isNoSuchFile {
      return nil
    } catch where error.isPermissionDenied {
      // Not readable by us: we can still replace it if the directory lets us; keep what
      // metadata `stat` (which needs no read permission) tells.
      guard let status = try withSystemErrors({ () throws(SystemError) in try FileSystem.status(source) }) else { return nil }
      return (nil, status)
    } catch {
      throw .system(error)
    }
  }

  /// A save needs write permission on the file itself, not only on its directory (which is
  /// all a rename needs): a file made read-only (mode 0444, `chattr +i`, a read-only mount)
  /// is refused as a write in place would be, with the target untouched. Root, to whom mode
  /// bits do not apply, replaces a 0444 file and keeps its mode, as `sed -i` does.
  private func checkTargetWritable() throws(StoreError) {
    try withSystemErrors { () throws(SystemError) in
      try FileSystem.checkWritable(target, operation: "write", displayPath: displayPath)
    }
  }

  private func createTemporary(mode: UInt32) throws(StoreError) -> (OpenFile, String) {
    let template = names.temporaryPathPrefix
    for _ in 0..<100 {
      let candidate = template + makeSuffix()
      do {
        return (try OpenFile(path: candidate, options: .createExclusive(mode: mode)), candidate)
      } catch where error.errorNumber == .fileExists {
        continue  // a leftover or someone else's name (even a symlink): pick another
      } catch where error.isNoSuchFile {
        throw .missingDirectory(path: names.directory)
      } catch {
        throw .system(SystemError(code: error.code, operation: "create temporary file", path: candidate))
      }
    }
    throw .system(SystemError(code: ErrorNumber.fileExists.rawValue, operation: "create temporary file", path: template + "XXXXXXXX"))
  }

  /// Owner and group first (`chown` clears set-id bits), then mode, then extended attributes.
  /// Without an original there is nothing to inherit: the temp file was created with what
  /// any new file gets. When this user may not give the file away (`EPERM`), the group alone
  /// is kept if possible and the file becomes the writer's, as with any editor that saves by
  /// rename.
  private func inheritMetadata(from original: (file: OpenFile?, status: FileStatus)?, onto temporary: OpenFile) throws(SystemError) {
    guard let original else { return }
    let status = original.status
    // Compare with what the temp file got, not with the effective ids: a set-group-id
    // directory gives new files its own group.
    let created = try temporary.status()
    if status.owner != created.owner || status.group != created.group {
      do {
        try temporary.setOwner(user: status.owner, group: status.group)
      } catch where error.isPermissionDenied {
        try? temporary.setOwner(user: UInt32.max, group: status.group)
      }
    }
    try temporary.setPermissions(status.permissions)
    guard let file = original.file else { return }
    // Other attributes are kept where they can be; the access ACL must be, or the save fails:
    // with an ACL the mode's group bits are its mask, which can grant more than its group
    // entry, so the mode alone would widen access.
    let failed = temporary.copyExtendedAttributes(from: file)
    if let acl = failed.first(where: { $0.name == AtomicReplace.accessControlListAttribute }) {
      throw SystemError(code: acl.code, operation: "copy \(AtomicReplace.accessControlListAttribute) to", path: temporary.path)
    }
  }

  /// The extended attribute that holds a file's POSIX access ACL.
  static let accessControlListAttribute = "system.posix_acl_access"
}
