import Glibc

/// Which thread is running: what a lock that must refuse its own owner (a nested request
/// would wait for itself for ever) compares.
package enum ThreadIdentity {
  /// The calling thread's id, unique among the threads alive in this process.
  /// The corresponding C function is `pthread_self`.
  package static var current: UInt { UInt(pthread_self()) }
}
