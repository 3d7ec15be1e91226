import Glibc
import Testing
@testable import CCSyncSystem

/// A socket's receive timeout from a `Duration` (``Duration/socketTimeout``): a zero `timeval`
/// means "no timeout" to the kernel, so a deadline less than a microsecond away, or already
/// past, must still give one microsecond, or the read it bounds would wait for ever.
@Suite struct DurationConversionTests {
  @Test(arguments: [
    (Duration.zero, 0, 1), (.nanoseconds(999), 0, 1), (.nanoseconds(-5), 0, 1), (.seconds(-3), 0, 1),
    (.microseconds(1), 0, 1), (.microseconds(1500), 0, 1500), (.seconds(2) + .microseconds(3), 2, 3),
    (.seconds(5), 5, 0),
  ])
  func aSocketTimeoutIsWholeMicrosecondsAndNeverZero(_ duration: Duration, seconds: Int, microseconds: Int) {
    let value = duration.socketTimeout
    #expect(value.tv_sec == seconds && value.tv_usec == microseconds, "\(duration): \(value.tv_sec) s \(value.tv_usec) µs")
  }

  @Test func aSocketTimeoutSaturatesInsteadOfOverflowing() {
    // Saturated at the largest `Int64` of nanoseconds, about 292 years.
    let value = Duration.seconds(Int64.max).socketTimeout
    let microseconds = Int64.max / 1000
    #expect(value.tv_sec == Int(microseconds / 1_000_000) && value.tv_usec == Int(microseconds % 1_000_000), "\(value.tv_sec) s")
  }
}
