import Glibc

/// Closes `descriptor`, reporting an error (a delayed write error on some file systems) naming
/// `path`. Never retried: on Linux the descriptor is gone even when `close` fails.
package func closeDescriptor(_ descriptor: Int32, path: String?) throws(SystemError) {
  if Glibc.close(descriptor) == -1 {
    let code = errno
    if code != EINTR { throw SystemError(code: code, operation: "close", path: path) }
  }
}

/// Writes every byte of `bytes` to `descriptor`, looping over short writes.
/// - Throws: `SystemError` naming `path` (`ENOSPC`, `EPIPE`...); some bytes may have been written.
/// The corresponding C function is `write`.
package func writeFully(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer, path: String?) throws(SystemError) {
  var offset = 0
  while offset < bytes.count {
    let written = try systemCall("write", path: path) {
      Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
    }
    if written == 0 { throw SystemError(code: EIO, operation: "write", path: path) }
    offset += written
  }
}
