/// Wakes a thread waiting in ``waitForInput(from:timeout:)`` from any other thread (a file
/// watcher's handler, for one): a non-blocking, close-on-exec pipe.
///
/// Wake-ups before a ``drain()`` coalesce. `Sendable`: it only reads and writes descriptors
/// that stay open until `deinit`.
package final class WakeUpChannel: InputSource, Sendable {
  private let pipe: WakeUpPipe

  /// Opens the pipe.
  /// - Throws: `SystemError` when no descriptor is left (`EMFILE`, `ENFILE`).
  /// The corresponding C functions are `pipe` and `fcntl`.
  package init() throws(SystemError) {
    pipe = try WakeUpPipe()
  }

  /// Makes the waiting thread's ``waitForInput(from:timeout:)`` return. Never blocks.
  /// The corresponding C function is `write`.
  package func wakeUp() {
    pipe.signal()
  }

  /// Forgets the wake-ups so far, so the next wait waits again. Never blocks.
  /// The corresponding C function is `read`.
  package func drain() {
    pipe.drain()
  }

  /// The descriptor to wait on.
  package var descriptorToPoll: Int32 { pipe.readDescriptor }
}
