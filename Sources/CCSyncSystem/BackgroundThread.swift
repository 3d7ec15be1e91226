import Glibc

/// A POSIX thread running one closure, for loops that must not take a thread from Swift's
/// cooperative pool (they block in `poll`).
///
/// `Sendable`: its fields are set once before the thread can see them.
package final class BackgroundThread: Sendable {
  private let thread: pthread_t

  /// Starts a thread named `name` (at most 15 bytes, shown in `/proc/PID/task/TID/comm`)
  /// with a stack of `stackSize` bytes (1 MiB by default: handlers run on it and may parse
  /// nested JSON; untouched pages cost no memory), running `body`.
  /// - Throws: `SystemError` when the thread cannot be created (`EAGAIN`).
  /// The corresponding C function is `pthread_create`.
  package init(name: String, stackSize: Int = 1024 * 1024, body: @escaping @Sendable () -> Void) throws(SystemError) {
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    defer { pthread_attr_destroy(&attributes) }
    pthread_attr_setstacksize(&attributes, max(stackSize, Int(PTHREAD_STACK_MIN)))
    let context = Unmanaged.passRetained(Context(name: name, body: body)).toOpaque()
    var thread = pthread_t()
    let result = pthread_create(&thread, &attributes, { raw in
      let context = Unmanaged<Context>.fromOpaque(raw!).takeRetainedValue()
      context.run()
      return nil
    }, context)
    if result != 0 {
      Unmanaged<Context>.fromOpaque(context).release()
      throw SystemError(code: result, operation: "pthread_create")
    }
    self.thread = thread
  }

  /// Whether the caller is running on this thread.
  package var isCurrent: Bool { pthread_equal(pthread_self(), thread) != 0 }

  /// Waits for the thread to finish. Must not be called on the thread itself.
  /// The corresponding C function is `pthread_join`.
  package func join() { pthread_join(thread, nil) }

  /// Lets the thread release its resources by itself when it finishes, for a thread that
  /// will not be joined. The corresponding C function is `pthread_detach`.
  package func detach() { pthread_detach(thread) }

  /// The kernel's id for the calling thread (`gettid`), read from `/proc/thread-self`.
  package static func currentThreadID() -> Int32? {
    guard let link = try? symbolicLinkTarget(atPath: "/proc/thread-self") else { return nil }
    return Int32(FilePath.name(of: link))
  }

  private final class Context: Sendable {
    let name: String
    let body: @Sendable () -> Void
    init(name: String, body: @escaping @Sendable () -> Void) {
      self.name = name
      self.body = body
    }

    func run() {
      // pthread_setname_np is not visible through the Glibc module; the proc file is the
      // same thing. A name that does not fit is cut to 15 bytes by the kernel.
      let descriptor = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
      if descriptor >= 0 {
        _ = name.withCString { write(descriptor, $0, strlen($0)) }
        close(descriptor)
      }
      body()
    }
  }
}
