import CCSyncSystemShims
import Glibc

/// Wakes a thread waiting in ``waitForInput(from:timeout:)`` (or `poll`) from any other thread
/// (a file watcher's handler, for one): a non-blocking, close-on-exec pipe.
///
/// Wake-ups before a ``drain()`` coalesce: a full pipe already means "wake up". `Sendable`: it
/// only reads and writes descriptors that stay open until `deinit`.
package final class WakeUpChannel: InputSource, Sendable {
  /// The end to wait on for readability.
  private let readDescriptor: Int32
  private let writeDescriptor: Int32

  /// Opens the pipe.
  /// - Throws: `SystemError` when no descriptor is left (`EMFILE`, `ENFILE`).
  /// The corresponding C function is `pipe2`.
  package init() throws(SystemError) {
    var ends: [Int32] = [-1, -1]
    _ = try systemCall("pipe") { pipe2(&ends, O_CLOEXEC | O_NONBLOCK) }
    readDescriptor = ends[0]
    writeDescriptor = ends[1]
  }

  deinit {
    close(readDescriptor)
    close(writeDescriptor)
  }

  /// Makes the waiting thread's ``waitForInput(from:timeout:)`` return. Never blocks.
  /// The corresponding C function is `write`.
  package func wakeUp() {
    var byte: UInt8 = 1
    while write(writeDescriptor, &byte, 1) == -1 && errno == EINTR {}
  }

  /// Forgets the wake-ups so far, so the next wait waits again. Never blocks.
  /// The corresponding C function is `read`.
  package func drain() {
    var buffer = [UInt8](repeating: 0, count: 64)
    while true {
      let count = read(readDescriptor, &buffer, buffer.count)
      if count > 0 { continue }
      if count == -1 && errno == EINTR { continue }
      return
    }
  }

  /// The descriptor to wait on.
  package var descriptorToPoll: Int32 { readDescriptor }
}
