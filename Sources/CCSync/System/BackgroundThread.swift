import Glibc

/// Starts a detached thread running `body` (for loops that block in the kernel: a signal
/// pipe, an inotify `poll`). Dispatch's pool threads are not meant to block forever.
/// - Throws: ``SystemError`` when the thread cannot be created.
func startBackgroundThread(name: String, _ body: @escaping @Sendable () -> Void) throws(SystemError) {
  final class Box: @unchecked Sendable {  // handed to exactly one thread, read once
    let body: @Sendable () -> Void
    let name: String
    init(_ body: @escaping @Sendable () -> Void, name: String) {
      self.body = body
      self.name = name
    }
  }
  let box = Unmanaged.passRetained(Box(body, name: name)).toOpaque()
  var thread = pthread_t()
  var attributes = pthread_attr_t()
  pthread_attr_init(&attributes)
  defer { pthread_attr_destroy(&attributes) }
  pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
  let result = pthread_create(&thread, &attributes, { argument in
    let box = Unmanaged<AnyObject>.fromOpaque(argument!).takeRetainedValue() as! Box
    pthread_setname_np(pthread_self(), String(box.name.prefix(15)))
    box.body()
    return nil
  }, box)
  if result != 0 {
    Unmanaged<AnyObject>.fromOpaque(box).release()
    throw SystemError(code: result, operation: "create thread")
  }
}
