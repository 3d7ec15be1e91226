import CCSyncSystemShims
import Glibc

/// A one-shot timer a thread waits for in `poll`, as for any descriptor: it becomes readable
/// when it expires. Arming and disarming it wakes nobody, so a thread can set a deadline for
/// another thread without waking it unless the deadline passes (the file watcher's hand-over,
/// docs/ARCHITECTURE.md, "Threads").
///
/// `Sendable`: it only makes calls on a descriptor that stays open until `deinit`.
package final class TimerDescriptor: Sendable {
  /// The descriptor to wait on for readability.
  package let descriptor: Int32

  /// Creates a disarmed timer on `CLOCK_MONOTONIC`.
  /// - Throws: `SystemError` when no descriptor is left (`EMFILE`, `ENFILE`).
  /// The corresponding C function is `timerfd_create`.
  package init() throws(SystemError) {
    descriptor = try systemCall("timerfd_create") {
      timerfd_create(CLOCK_MONOTONIC, Int32(TFD_CLOEXEC | TFD_NONBLOCK))
    }
  }

  deinit { close(descriptor) }

  /// Makes the timer expire `delay` from now (at once for zero or less), replacing any
  /// earlier setting. The corresponding C function is `timerfd_settime`.
  package func arm(after delay: Duration) {
    let nanoseconds = max(delay.nanoseconds, 1)  // zero would disarm
    set(timespec(tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000)))
  }

  /// Cancels a pending expiry. The corresponding C function is `timerfd_settime`.
  package func disarm() {
    set(timespec(tv_sec: 0, tv_nsec: 0))
  }

  /// Forgets an expiry that has happened, so the next wait waits again. Never blocks.
  /// The corresponding C function is `read`.
  package func drain() {
    var expirations: UInt64 = 0
    while read(descriptor, &expirations, 8) == -1 && errno == EINTR {}
  }

  private func set(_ value: timespec) {
    var setting = itimerspec(it_interval: timespec(tv_sec: 0, tv_nsec: 0), it_value: value)
    // Fails only for an invalid descriptor or value, which this type never passes.
    _ = timerfd_settime(descriptor, 0, &setting, nil)
  }
}
