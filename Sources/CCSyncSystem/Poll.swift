import Glibc

/// Waits until one of `descriptors` is readable or `timeout` passes.
///
/// - Parameters:
///   - descriptors: the descriptors to wait on; negative entries are ignored.
///   - timeout: how long to wait at most; `nil` waits until a descriptor is readable.
/// - Returns: for each descriptor, whether it is readable (or in error or hung up, which a
///   read reports). All `false` after the timeout, or when a signal interrupted the wait: the
///   caller's loop recomputes its deadline and waits again.
/// - Throws: `SystemError` for a failure other than `EINTR`.
/// The corresponding C function is `poll`.
package func waitUntilReadable(_ descriptors: [Int32], timeout: Duration?) throws(SystemError) -> [Bool] {
  var entries = descriptors.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
  // Rounded up, so a deadline 0.3 ms away does not become a busy loop of zero timeouts.
  let milliseconds = timeout?.pollMilliseconds ?? -1
  let count = entries.withUnsafeMutableBufferPointer {
    poll($0.baseAddress, nfds_t($0.count), milliseconds)
  }
  if count == -1 {
    let code = errno
    if code == EINTR { return descriptors.map { _ in false } }
    throw SystemError(code: code, operation: "poll")
  }
  let ready = Int16(POLLIN | POLLERR | POLLHUP | POLLNVAL)
  return entries.map { $0.revents & ready != 0 }
}
