import CCSyncSystemShims
import Glibc

/// An open file descriptor that closes itself when released.
///
/// Not `Sendable`: one owner uses it at a time. Every call retries on `EINTR` (except
/// `close`, which must never be retried on Linux) and throws a ``SystemError`` naming the path.
package final class OpenFile {
  package let descriptor: Int32
  package let path: String
  private var isClosed = false

  /// How to open a file. The flags are always combined with `O_CLOEXEC`.
  package struct Options {
    package var flags: Int32
    package var mode: UInt32 = 0

    package static let readOnly = Options(flags: O_RDONLY)
    /// Read-only without blocking on a FIFO or device: used to `fstat` before reading.
    package static let readOnlyNonBlocking = Options(flags: O_RDONLY | O_NONBLOCK)
    /// The same, failing with `ELOOP` when the last component is a symlink.
    package static let readOnlyNonBlockingNoFollow = Options(flags: O_RDONLY | O_NONBLOCK | O_NOFOLLOW)
    /// A new file that must not exist yet and must not be a symlink.
    package static func createExclusive(mode: UInt32) -> Options {
      Options(flags: O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode: mode)
    }
    package static let directory = Options(flags: O_RDONLY | O_DIRECTORY)
    /// A lock file: created when missing (mode 0666 less the umask, like flock(1)), never
    /// truncated, never followed if it is a symlink. Read-only suffices for `flock`.
    /// `O_NONBLOCK` keeps a FIFO planted at the lock's name from blocking the open; it does
    /// not make `flock` non-blocking.
    package static let lockFile = Options(flags: O_RDONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK, mode: 0o666)
    /// An existing lock file, for users who may not create one.
    package static let existingLockFile = Options(flags: O_RDONLY | O_NOFOLLOW | O_NONBLOCK)
    /// An existing file to inspect without following a symlink or blocking on a FIFO.
    package static let inspect = Options(flags: O_RDONLY | O_NOFOLLOW | O_NONBLOCK)
    /// Appending to a file, created when missing (mode 0644 less the umask), never followed
    /// if it is a symlink: each write lands whole at the end (`O_APPEND`).
    package static let append = Options(flags: O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, mode: 0o644)
    /// An existing file to read and append to (`O_APPEND`: each write lands whole at the
    /// end), never followed if it is a symlink.
    package static let readAndAppend = Options(flags: O_RDWR | O_APPEND | O_NOFOLLOW)
    /// Reading and writing, without waiting (a lock file reopened where a lock needs it).
    package static let readWriteNonBlocking = Options(flags: O_RDWR | O_NONBLOCK)
  }

  /// Opens `path`. The corresponding C function is `open`.
  package init(path: String, options: Options) throws(SystemError) {
    self.path = path
    descriptor = try systemCall("open", path: path) {
      path.withCString { open($0, options.flags | O_CLOEXEC, mode_t(options.mode)) }
    }
  }

  /// Opens the very file `file` has open again, with `options` (through /proc/self/fd, so
  /// not whatever its path names now), under the same path for messages.
  package init(reopening file: OpenFile, options: Options) throws(SystemError) {
    path = file.path
    let link = "/proc/self/fd/\(file.descriptor)"
    descriptor = try systemCall("open", path: file.path) { open(link, options.flags | O_CLOEXEC, mode_t(options.mode)) }
  }


  deinit {
    if !isClosed { Glibc.close(descriptor) }
  }

  /// Closes the descriptor, reporting an error (a delayed write error on some file systems).
  /// Never retried: on Linux the descriptor is gone even when `close` fails.
  package func close() throws(SystemError) {
    guard !isClosed else { return }
    isClosed = true
    try closeDescriptor(descriptor, path: path)
  }

  /// The file's status. The corresponding C function is `fstat`.
  package func status() throws(SystemError) -> FileStatus {
    var result = stat()
    _ = try systemCall("stat", path: path) { fstat(descriptor, &result) }
    return FileStatus(result)
  }

  /// Reads until end of file, that is until a `read` returns nothing. `sizeHint` sizes the
  /// buffer.
  package func readToEnd(sizeHint: Int) throws(SystemError) -> [UInt8] {
    try read(sizeHint: sizeHint, statusSize: nil)
  }

  /// Reads a regular file whose size `fstat` gave as `size`, to its end.
  ///
  /// The buffer holds one byte more than `size`: a `read` that returns fewer bytes than it was
  /// given room for, and brings the total to exactly `size`, has met the end of the file as
  /// it was at that moment, so the `read` that would return 0 is not made. A file that grew
  /// since the `fstat` fills the buffer and is read on until a `read` returns nothing; one that
  /// shrank returns fewer bytes, and likewise. A file whose `fstat` size is wrong is read to
  /// its true end (`/proc` files say 0) unless a `read` also stops short exactly at that
  /// wrong size, which a FUSE file system in direct I/O mode could do and local ones cannot.
  package func readRegularFile(size: Int) throws(SystemError) -> [UInt8] {
    try read(sizeHint: size, statusSize: size)
  }

  private func read(sizeHint: Int, statusSize: Int?) throws(SystemError) -> [UInt8] {
    var capacity = max(sizeHint, 0) + 1
    var buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 1)
    defer { buffer.deallocate() }
    var count = 0
    while true {
      if count == capacity {
        let larger = UnsafeMutableRawPointer.allocate(byteCount: capacity * 2, alignment: 1)
        larger.copyMemory(from: buffer, byteCount: count)
        buffer.deallocate()
        buffer = larger
        capacity *= 2
      }
      let start = buffer + count
      let room = capacity - count
      let got = try systemCall("read", path: path) { Glibc.read(descriptor, start, room) }
      if got == 0 { break }
      count += got
      if got < room && count == statusSize { break }
    }
    return [UInt8](UnsafeRawBufferPointer(start: buffer, count: count))
  }

  /// Up to `count` bytes from `offset` (fewer where the file ends first), read without moving
  /// the file's offset. The corresponding C function is `pread`.
  package func read(count: Int, at offset: Int64) throws(SystemError) -> [UInt8] {
    let buffer = UnsafeMutableRawPointer.allocate(byteCount: max(count, 1), alignment: 1)
    defer { buffer.deallocate() }
    var filled = 0
    while filled < count {
      let got = try systemCall("read", path: path) {
        pread(descriptor, buffer + filled, count - filled, off_t(offset + Int64(filled)))
      }
      if got == 0 { break }
      filled += got
    }
    return [UInt8](UnsafeRawBufferPointer(start: buffer, count: filled))
  }

  /// Writes every byte, looping over short writes. The corresponding C function is `write`.
  package func writeAll(_ bytes: UnsafeRawBufferPointer) throws(SystemError) {
    try writeFully(descriptor, bytes, path: path)
  }

  /// Writes every byte of `bytes`.
  package func writeAll(_ bytes: [UInt8]) throws(SystemError) {
    try bytes.withUnsafeBytes { buffer in
      Result { () throws(SystemError) in try writeAll(buffer) }
    }.get()
  }

  /// Flushes data and metadata to the device. The corresponding C function is `fsync`.
  package func synchronize() throws(SystemError) {
    _ = try systemCall("fsync", path: path) { fsync(descriptor) }
  }

  /// Sets the permission bits. The corresponding C function is `fchmod`.
  package func setPermissions(_ mode: UInt32) throws(SystemError) {
    _ = try systemCall("chmod", path: path) { fchmod(descriptor, mode_t(mode)) }
  }

  /// Sets owner and group (`UInt32.max` leaves one unchanged). The corresponding C function is `fchown`.
  package func setOwner(user: UInt32, group: UInt32) throws(SystemError) {
    _ = try systemCall("chown", path: path) { fchown(descriptor, user, group) }
  }

  /// Takes an advisory lock on the whole file; returns `false` when `nonBlocking` and another
  /// owner holds a conflicting lock. The corresponding C function is `flock`.
  package func lock(exclusive: Bool, nonBlocking: Bool) throws(SystemError) -> Bool {
    let operation = (exclusive ? LOCK_EX : LOCK_SH) | (nonBlocking ? LOCK_NB : 0)
    do {
      _ = try systemCall("lock", path: path) { flock(descriptor, operation) }
      return true
    } catch where nonBlocking && error.code == EWOULDBLOCK {
      return false
    }
  }

  /// Releases the advisory lock. The corresponding C function is `flock`.
  package func unlock() throws(SystemError) {
    _ = try systemCall("unlock", path: path) { flock(descriptor, LOCK_UN) }
  }
}

extension OpenFile {
  /// Copies every extended attribute this process can read from `source` (user attributes,
  /// POSIX ACLs in `system.posix_acl_access`, security labels) onto this file. Attributes the
  /// file system or this user cannot set are skipped: the caller decides whether that matters.
  /// The corresponding C functions are `flistxattr`, `fgetxattr` and `fsetxattr`.
  /// - Returns: the attributes that could not be copied, each with the `errno` of its failure.
  package func copyExtendedAttributes(from source: OpenFile) -> [(name: String, code: Int32)] {
    let listSize = flistxattr(source.descriptor, nil, 0)
    guard listSize > 0 else { return [] }
    var names = [CChar](repeating: 0, count: listSize)
    let listed = flistxattr(source.descriptor, &names, names.count)
    guard listed > 0 else { return [] }
    var failed: [(name: String, code: Int32)] = []
    var start = 0
    while start < listed {
      var end = start
      while end < listed && names[end] != 0 { end += 1 }
      let name = String(decoding: names[start..<end].map { UInt8(bitPattern: $0) }, as: UTF8.self)
      start = end + 1
      let valueSize = fgetxattr(source.descriptor, name, nil, 0)
      guard valueSize >= 0 else { failed.append((name, errno)); continue }
      var value = [UInt8](repeating: 0, count: max(valueSize, 1))
      let got = fgetxattr(source.descriptor, name, &value, valueSize)
      guard got >= 0, fsetxattr(descriptor, name, value, got, 0) == 0 else { failed.append((name, errno)); continue }
    }
    return failed
  }
}
