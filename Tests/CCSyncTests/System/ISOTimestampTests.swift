import Glibc
import Testing
@testable import CCSyncSystem

/// `FileSystem.isoTimestamp` computes the civil date itself; held here to `gmtime_r`'s, and to
/// its own reader.
@Suite struct ISOTimestampTests {
  /// `seconds` as `gmtime_r` and `strftime` give it, with the milliseconds.
  func expected(_ seconds: Int64, milliseconds: Int64) -> String {
    var time = time_t(seconds)
    var parts = tm()
    gmtime_r(&time, &parts)
    var buffer = [CChar](repeating: 0, count: 64)
    let count = strftime(&buffer, buffer.count, "%Y-%m-%dT%H:%M:%S", &parts)
    let date = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    let millis = String(milliseconds)
    return date + "." + String(repeating: "0", count: 3 - millis.count) + millis + "Z"
  }

  @Test func datesAgreeWithGmtimeAcrossLeapYearsAndCenturies() {
    let fixed: [Int64] = [
      0, 59, 86_399, 86_400, 951_782_400 /* 2000-02-29 */, 951_868_800, 4_107_542_400 /* 2100-02-28 */,
      4_107_628_800, 1_764_926_705, 253_402_300_799 /* 9999-12-31T23:59:59 */,
    ]
    var generator = SystemRandomNumberGenerator()
    let random = (0..<2000).map { _ in Int64.random(in: 0...253_402_300_799, using: &generator) }
    for seconds in fixed + random {
      let milliseconds = seconds % 1000
      let text = FileSystem.isoTimestamp(FileIdentity.Timestamp(seconds: seconds, nanoseconds: milliseconds * 1_000_000 + 999))
      #expect(text == expected(seconds, milliseconds: milliseconds), "\(seconds)")
      #expect(FileSystem.seconds(fromISOTimestamp: text) == Double(seconds) + Double(milliseconds) / 1000, "\(seconds)")
    }
  }

  @Test func theFormatIsTwentyFourCharacters() {
    #expect(FileSystem.isoTimestamp(FileIdentity.Timestamp(seconds: 1_764_926_705, nanoseconds: 7_000_000)) == "2025-12-05T09:25:05.007Z")
  }
}
