/// Polling: comparing each polled registration's file identity with the last one seen.
/// Used in polling mode (asked for, or after falling back from inotify) and for a
/// registration whose directory cannot be watched. Runs under the state lock.
extension WatcherState {
  /// Stats every polled registration's file (following links) and wakes those whose
  /// identity changed, including appearing and vanishing. An error other than "missing"
  /// (`EACCES`...) counts as missing.
  mutating func pollIdentities() {
    for (id, registration) in registrations where usesPolling || registration.needsPolling {
      let identity = (try? fileIdentity(atPath: registration.path)) ?? nil
      if identity != registration.polledIdentity {
        registrations[id]?.polledIdentity = identity
        wake(id, .poll)
      }
    }
  }
}
