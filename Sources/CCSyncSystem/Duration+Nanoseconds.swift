extension Duration {
  /// The duration in whole nanoseconds, saturating at the largest `Int64` (about 292 years)
  /// and at the smallest: for arithmetic on the monotonic clock's nanosecond readings.
  package var nanoseconds: Int64 {
    let (seconds, attoseconds) = components
    let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
    guard !overflow else { return seconds < 0 ? .min : .max }
    let (total, sumOverflow) = whole.addingReportingOverflow(attoseconds / 1_000_000_000)
    guard !sumOverflow else { return seconds < 0 ? .min : .max }
    return total
  }
}
