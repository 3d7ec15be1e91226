/// When a ``CodableStorage`` writes local changes to its document. `Sendable`.
public enum UpdateMode: Sendable, Equatable {
  /// Write once the value has not changed for `idle`; a value that never stops changing is
  /// still written once `maximumDelay` has passed since its first unsaved change (`nil`: ten
  /// times `idle`, at least 10 s).
  case afterIdle(_ idle: Duration = .seconds(2), maximumDelay: Duration? = nil)
  /// Write at most once per `interval`: the first change is written at once, later ones at
  /// the end of the interval; the last change is always written.
  case throttled(_ interval: Duration)
  /// Write before the setter returns (on the calling thread). Errors are reported and retried.
  case immediate
  /// Write only on ``CodableStorage/save()`` and ``CodableStorage/flush()`` (and at exit).
  case manual

  /// The default: ``afterIdle(_:maximumDelay:)`` with 2 s.
  public static let afterIdle = UpdateMode.afterIdle(.seconds(2), maximumDelay: nil)

  /// The default of the `key:` initialisers: ``throttled(_:)`` with 1 s, WLStorage's
  /// "throttled to once per second".
  public static let keyDefault = UpdateMode.throttled(.seconds(1))

  /// The longest a change waits under `.afterIdle`.
  var maximumIdleDelay: Duration? {
    guard case .afterIdle(let idle, let maximumDelay) = self else { return nil }
    return maximumDelay ?? max(idle * 10, .seconds(10))
  }
}
