import CCSyncSystem
import CCSyncJSON

/// When a ``CodableStorage`` writes local changes to its file. `Sendable`.
public enum UpdateMode: Sendable, Equatable {
  /// Write once the value has not changed for `seconds`; a value that never stops changing is
  /// still written once `maximumDelay` seconds have passed since its first unsaved change
  /// (`nil`: ten times `seconds`, at least 10 s).
  case afterIdle(seconds: Double = 2.0, maximumDelay: Double? = nil)
  /// Write at most once per `seconds`: the first change is written at once, later ones at the
  /// end of the interval; the last change is always written.
  case throttled(seconds: Double)
  /// Write before the setter returns (on the calling thread). Errors are reported and retried.
  case immediate
  /// Write only on ``CodableStorage/save()`` and ``CodableStorage/flush()`` (and at exit).
  case manual

  /// The default: ``afterIdle(seconds:maximumDelay:)`` with 2 s.
  public static let afterIdle = UpdateMode.afterIdle(seconds: 2.0, maximumDelay: nil)

  /// The longest a change waits under `.afterIdle`.
  var maximumIdleDelay: Double? {
    guard case .afterIdle(let seconds, let maximumDelay) = self else { return nil }
    return maximumDelay ?? max(seconds * 10, 10)
  }
}
