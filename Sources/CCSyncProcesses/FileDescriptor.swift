import CCSyncSystemShims
import CCSyncSystem
import Glibc

/// An open file descriptor this process owns, closed by ``close()`` or, at the latest, when
/// the object is released: the ends of a pipe, an unnamed temporary file, a file handed to a
/// child process as its standard input or output.
///
/// Not `Sendable`: one owner uses it at a time (threads that must wake each other share a
/// ``WakeUpChannel`` instead). Every call retries on `EINTR`, except `close`, and throws a
/// ``SystemError`` naming ``path`` when there is one.
package final class FileDescriptor: InputSource {
  /// The descriptor number, for a child's standard streams or for `poll`.
  package let rawValue: Int32
  /// The file the descriptor was opened on, named in errors; `nil` for a pipe or an
  /// unlinked file.
  package let path: String?
  private var isClosed = false

  /// Takes ownership of `rawValue`, which must be open and owned by no one else.
  package init(owning rawValue: Int32, path: String?) {
    self.rawValue = rawValue
    self.path = path
  }

  deinit {
    if !isClosed { Glibc.close(rawValue) }
  }

  /// The descriptor to wait on for input.
  package var descriptorToPoll: Int32 { rawValue }

  /// Closes the descriptor, reporting an error (a delayed write error on some file systems).
  /// Never retried: on Linux the descriptor is gone even when `close` fails. A second call
  /// does nothing. The corresponding C function is `close`.
  package func close() throws(SystemError) {
    guard !isClosed else { return }
    isClosed = true
    try closeDescriptor(rawValue, path: path)
  }

  /// Writes every byte, looping over short writes.
  /// - Throws: `SystemError` (`ENOSPC`, `EPIPE`...); some bytes may have been written.
  /// The corresponding C function is `write`.
  package func writeAll(_ bytes: [UInt8]) throws(SystemError) {
    try bytes.withUnsafeBytes { buffer in
      Result { () throws(SystemError) in try writeFully(rawValue, buffer, path: path) }
    }.get()
  }

  /// Reads what can be read without waiting: on a non-blocking descriptor, until it has
  /// nothing more for now (`EAGAIN`) or reaches end of file. A blocking descriptor is read
  /// until end of file.
  /// - Throws: `SystemError` for a failure other than `EAGAIN`; the bytes read before it
  ///   are lost.
  /// The corresponding C function is `read`.
  package func readAvailable() throws(SystemError) -> [UInt8] {
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
      let count = buffer.withUnsafeMutableBytes { Glibc.read(rawValue, $0.baseAddress, $0.count) }
      if count > 0 {
        bytes += buffer[..<count]
      } else if count == 0 {
        return bytes
      } else {
        let code = errno
        if code == EINTR { continue }
        if code == EAGAIN || code == EWOULDBLOCK { return bytes }
        throw SystemError(code: code, operation: "read", path: path)
      }
    }
  }

  /// What one read of a non-blocking descriptor found.
  package enum ReadResult: Equatable {
    /// Some bytes.
    case bytes([UInt8])
    /// Nothing yet (`EAGAIN`).
    case nothingYet
    /// The end: every writer of a pipe closed it.
    case endOfFile
  }

  /// One read of at most `maximum` bytes from a non-blocking descriptor.
  /// - Throws: `SystemError` (`EIO`, `EBADF`).
  /// The corresponding C function is `read`.
  package func readOnce(maximum: Int = 65536) throws(SystemError) -> ReadResult {
    var buffer = [UInt8](repeating: 0, count: maximum)
    while true {
      let count = buffer.withUnsafeMutableBytes { Glibc.read(rawValue, $0.baseAddress, $0.count) }
      if count > 0 { return .bytes(Array(buffer[..<count])) }
      if count == 0 { return .endOfFile }
      let code = errno
      if code == EINTR { continue }
      if code == EAGAIN || code == EWOULDBLOCK { return .nothingYet }
      throw SystemError(code: code, operation: "read", path: path)
    }
  }

  /// The whole file from its first byte to its end, read without moving the descriptor's
  /// offset (so a child process writing through the same open file is not disturbed).
  /// - Throws: `SystemError` (`ESPIPE` for a pipe, `EIO`).
  /// The corresponding C function is `pread`.
  package func readContents() throws(SystemError) -> [UInt8] {
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
      let offset = off_t(bytes.count)
      let count = try systemCall("read", path: path) {
        buffer.withUnsafeMutableBytes { pread(rawValue, $0.baseAddress, $0.count, offset) }
      }
      if count == 0 { return bytes }
      bytes += buffer[..<count]
    }
  }
}

extension FileDescriptor {
  /// Opens a pipe. Both ends are close-on-exec, so a child started with ``Subprocess`` gets
  /// only the end it is given as a standard stream.
  /// - Parameters:
  ///   - nonBlockingRead: make reads from the read end return at once when it is empty
  ///     (for ``readAvailable()`` after ``waitForInput(from:timeout:)``).
  ///   - nonBlockingWrite: make writes to a full pipe fail with `EAGAIN` instead of waiting.
  /// - Throws: `SystemError` when no descriptor is left (`EMFILE`, `ENFILE`).
  /// The corresponding C functions are `pipe2` and `fcntl`.
  package static func makePipe(
    nonBlockingRead: Bool = false, nonBlockingWrite: Bool = false
  ) throws(SystemError) -> (readEnd: FileDescriptor, writeEnd: FileDescriptor) {
    var ends: [Int32] = [-1, -1]
    _ = try systemCall("create pipe") { pipe2(&ends, O_CLOEXEC) }
    let readEnd = FileDescriptor(owning: ends[0], path: nil)
    let writeEnd = FileDescriptor(owning: ends[1], path: nil)
    if nonBlockingRead { try readEnd.setNonBlocking() }
    if nonBlockingWrite { try writeEnd.setNonBlocking() }
    return (readEnd, writeEnd)
  }

  /// Opens an existing file for reading, close-on-exec (`/dev/null` as a child's input).
  /// - Throws: `SystemError` (`ENOENT`, `EACCES`...).
  /// The corresponding C function is `open`.
  package static func openForReading(_ path: String) throws(SystemError) -> FileDescriptor {
    let descriptor = try systemCall("open", path: path) { open(path, O_RDONLY | O_CLOEXEC) }
    return FileDescriptor(owning: descriptor, path: path)
  }

  /// Opens an existing file for writing, close-on-exec (`/dev/null` as a child's output).
  /// - Throws: `SystemError` (`ENOENT`, `EACCES`...).
  /// The corresponding C function is `open`.
  package static func openForWriting(_ path: String) throws(SystemError) -> FileDescriptor {
    let descriptor = try systemCall("open", path: path) { open(path, O_WRONLY | O_CLOEXEC) }
    return FileDescriptor(owning: descriptor, path: path)
  }

  /// Creates a file that must not exist yet, write-only and close-on-exec.
  /// - Parameter permissions: the mode bits, less the process's umask (0600 for a private copy).
  /// - Throws: `SystemError` (`EEXIST` when something is there, `EACCES`, `ENOSPC`...).
  /// The corresponding C function is `open` with `O_CREAT | O_EXCL`.
  package static func createNew(_ path: String, permissions: UInt32) throws(SystemError) -> FileDescriptor {
    let descriptor = try systemCall("open", path: path) {
      open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode_t(permissions))
    }
    return FileDescriptor(owning: descriptor, path: path)
  }

  /// An unnamed temporary file holding `bytes`, positioned at its start: created in
  /// `directory` as `ccsync-input-XXXXXX` (mode 0600), then unlinked at once, so nothing is
  /// left behind and a reader that never reads cannot block the writer (as a pipe could).
  /// Read-write: a child may also write its output to it, read back with ``readContents()``.
  /// - Throws: `SystemError` when the file cannot be created (`create temporary file` naming
  ///   `directory`) or written (`write`, `ENOSPC`); nothing is left behind either way.
  /// The corresponding C functions are `mkostemp`, `unlink`, `write` and `lseek`.
  package static func temporaryFile(
    containing bytes: [UInt8], in directory: String = ThisProcess.temporaryDirectory
  ) throws(SystemError) -> FileDescriptor {
    var template = Array((directory + "/ccsync-input-XXXXXX").utf8CString)
    let descriptor = template.withUnsafeMutableBufferPointer { mkostemp($0.baseAddress!, O_CLOEXEC) }
    guard descriptor >= 0 else {
      throw SystemError(code: errno, operation: "create temporary file", path: directory)
    }
    template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
    let file = FileDescriptor(owning: descriptor, path: nil)
    try file.writeAll(bytes)
    _ = lseek(descriptor, 0, SEEK_SET)
    return file
  }

  /// Makes reads and writes return `EAGAIN` instead of waiting.
  /// The corresponding C function is `fcntl` with `F_SETFL`.
  private func setNonBlocking() throws(SystemError) {
    let flags = try systemCall("fcntl", path: path) { fcntl(rawValue, F_GETFL) }
    _ = try systemCall("fcntl", path: path) { fcntl(rawValue, F_SETFL, flags | O_NONBLOCK) }
  }
}
