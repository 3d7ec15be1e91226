import Glibc
import Synchronization

/// The last token ``ThreadIdentity/newHolder()`` gave.
private let lastHolderToken = Atomic<UInt>(0)

/// Which thread is running: what a lock that must refuse its own owner (a nested request
/// would wait for itself for ever) compares.
package enum ThreadIdentity {
  /// The calling thread's id, unique among the threads alive in this process.
  /// The corresponding C function is `pthread_self`.
  package static var current: UInt { UInt(pthread_self()) }

  /// A token that stands for a holder that is no thread: a lock handle, which may be
  /// released on another thread than the one that took it. Never equal to a thread's id
  /// (those are addresses, whose top bit is clear in user space) nor to another token.
  package static func newHolder() -> UInt {
    (UInt(1) << (UInt.bitWidth - 1)) | lastHolderToken.add(1, ordering: .relaxed).newValue
  }
}
