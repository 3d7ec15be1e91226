import Glibc

/// The permission a watcher thread gives the handler it calls to run the reload it asks for
/// right there, on the thread that read the event, instead of handing it to another thread
/// (a thread woken on the other core costs about 0.1 ms). The watcher gives it early in a
/// turn (``LoopHandOver/inlineBudget``) and only while a standby thread can take its loop
/// over (``LoopHandOver``); ``ReloadQueue/schedule(_:reload:)`` takes it.
///
/// A thread-local flag: set around one handler call, taken at most once.
enum InlineReload {
  private static let key: pthread_key_t = {
    var key = pthread_key_t()
    pthread_key_create(&key, nil)
    return key
  }()

  /// Calls `body` with the permission given when `permitted`, and none left afterwards.
  static func permitting<Result>(_ permitted: Bool, _ body: () -> Result) -> Result {
    if permitted { pthread_setspecific(key, UnsafeRawPointer(bitPattern: 1)) }
    defer { if permitted { pthread_setspecific(key, nil) } }
    return body()
  }

  /// Whether the calling thread may run one reload now; `true` at most once per permission,
  /// so that work started by that reload (another storage's) is handed off as usual.
  static func take() -> Bool {
    guard pthread_getspecific(key) != nil else { return false }
    pthread_setspecific(key, nil)
    return true
  }
}
