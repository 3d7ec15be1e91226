
/// Something a thread can wait on until it has input: a ``FileDescriptor``, the
/// ``SignalPipe``, a ``WakeUpChannel``.
package protocol InputSource {
  /// The descriptor `poll` watches. It stays owned by the conforming value, which must
  /// outlive the wait.
  var descriptorToPoll: Int32 { get }
}

/// Waits until one of `sources` has input or `timeout` passes.
///
/// - Parameters:
///   - sources: what to wait on.
///   - timeout: how long to wait at most (rounded up to whole milliseconds); `nil` waits
///     until a source has input.
/// - Returns: for each source, whether it is readable (or hung up, or in error: the next
///   read tells which). All `false` after the timeout, or when a signal handler interrupted
///   the wait: the caller's loop looks at its state and waits again.
/// - Throws: `SystemError` for a failure other than `EINTR` (`ENOMEM`, `EINVAL`).
/// The corresponding C function is `poll`.
package func waitForInput(from sources: [any InputSource], timeout: Duration?) throws(SystemError) -> [Bool] {
  try waitUntilReadable(sources.map(\.descriptorToPoll), timeout: timeout)
}
