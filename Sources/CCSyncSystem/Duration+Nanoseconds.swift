import Glibc

/// Conversions of a `Duration` for the C APIs that take a timeout (`poll`'s milliseconds, a
/// `timespec`, a socket's `timeval`, Dispatch's nanoseconds): made at that boundary only,
/// time stays a `Duration` everywhere else.
extension Duration {
  /// The duration in whole nanoseconds, saturating at the largest `Int64` (about 292 years)
  /// and at the smallest.
  package var nanoseconds: Int64 {
    let (seconds, attoseconds) = components
    let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
    guard !overflow else { return seconds < 0 ? .min : .max }
    let (total, sumOverflow) = whole.addingReportingOverflow(attoseconds / 1_000_000_000)
    guard !sumOverflow else { return seconds < 0 ? .min : .max }
    return total
  }

  /// The duration as a `timespec`, zero for a negative one, saturating as ``nanoseconds``.
  package var timespec: Glibc.timespec {
    let total = max(nanoseconds, 0)
    return Glibc.timespec(tv_sec: Int(total / 1_000_000_000), tv_nsec: Int(total % 1_000_000_000))
  }

  /// The duration as a `timeval` for a socket's `SO_RCVTIMEO`: whole microseconds, at least
  /// one (a zero `timeval` means no timeout at all there), saturating as ``nanoseconds``.
  package var socketTimeout: Glibc.timeval {
    let total = max(nanoseconds / 1000, 1)
    return Glibc.timeval(tv_sec: Int(total / 1_000_000), tv_usec: Int(total % 1_000_000))
  }

  /// The duration in whole milliseconds for `poll`, 0 for zero or less, rounded up so that a
  /// deadline a fraction of a millisecond away does not turn into a busy loop of zero
  /// timeouts, and clamped to `Int32`.
  package var pollMilliseconds: Int32 {
    guard self > .zero else { return 0 }
    let (seconds, attoseconds) = components
    let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1000)
    guard !overflow else { return .max }
    return Int32(clamping: whole + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
  }
}
