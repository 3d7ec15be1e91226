import CCSyncSystem
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// ISO 8601 / RFC 3339 timestamps, written and read without Foundation's formatters (they
/// load ICU, which costs start-up time): exact calendar arithmetic on Unix time with the
/// proleptic Gregorian calendar (Howard Hinnant's days-from-civil algorithms).
///
/// Written: `2026-11-29T21:05:24Z`, or with fractional seconds when the date has any,
/// rounded to microseconds with trailing zeros dropped (`2026-11-29T21:05:24.123Z`).
/// Microseconds are what a `Date` (a `Double` of seconds since 2001) holds reliably for dates
/// of this era; finer digits would be rounding noise.
///
/// Read: `YYYY-MM-DDThh:mm:ss`, optional `.` and one or more fraction digits (nanoseconds
/// are the finest kept), then `Z` or an offset `+hh:mm`, `-hh:mm`, `+hhmm` or `+hh`. A
/// lowercase `t` or `z`, or a space for `T`, is accepted as RFC 3339 allows. Leap seconds
/// (`:60`) are not.
package enum ISO8601Timestamp {
  private static let secondsPerDay: Int64 = 86_400
  /// 0000-01-01T00:00:00Z and 10000-01-01T00:00:00Z in Unix time: the years four digits spell.
  private static let firstSecond: Int64 = -62_167_219_200
  private static let endSecond: Int64 = 253_402_300_800

  /// The timestamp text for `date`, or `nil` when the date is not finite or falls outside the
  /// years 0000 to 9999.
  package static func string(from date: Date) -> String? {
    let interval = date.timeIntervalSince1970
    guard interval.isFinite else { return nil }
    var whole = interval.rounded(.down)
    var microseconds = ((interval - whole) * 1_000_000).rounded()
    if microseconds >= 1_000_000 {
      whole += 1
      microseconds -= 1_000_000
    }
    guard whole >= Double(firstSecond), whole < Double(endSecond) else { return nil }
    var fraction = Int(microseconds)
    var fractionDigits = 6
    if fraction == 0 {
      fractionDigits = 0
    } else {
      while fraction % 10 == 0 {
        fraction /= 10
        fractionDigits -= 1
      }
    }
    return UTCTimestampText.text(seconds: Int64(whole), fraction: fraction, fractionDigits: fractionDigits)
  }

  /// The date `text` names, or `nil` when it is not a timestamp in the accepted form or names
  /// a day or time that does not exist (`2026-02-30`, `25:00`).
  package static func date(from text: String) -> Date? {
    var text = text
    return text.withUTF8 { date(fromUTF8: $0) }
  }

  private static func date(fromUTF8 bytes: UnsafeBufferPointer<UInt8>) -> Date? {
    var position = 0
    func digits(_ count: Int) -> Int? {
      guard position + count <= bytes.count else { return nil }
      var value = 0
      for _ in 0..<count {
        let digit = bytes[position] &- UInt8(ascii: "0")
        guard digit < 10 else { return nil }
        value = value * 10 + Int(digit)
        position += 1
      }
      return value
    }
    func skip(_ accepted: UInt8, _ alternative: UInt8? = nil, _ another: UInt8? = nil) -> Bool {
      guard position < bytes.count else { return false }
      let byte = bytes[position]
      guard byte == accepted || byte == alternative || byte == another else { return false }
      position += 1
      return true
    }

    guard let year = digits(4), skip(UInt8(ascii: "-")),
      let month = digits(2), skip(UInt8(ascii: "-")),
      let day = digits(2), skip(UInt8(ascii: "T"), UInt8(ascii: "t"), UInt8(ascii: " ")),
      let hour = digits(2), skip(UInt8(ascii: ":")),
      let minute = digits(2), skip(UInt8(ascii: ":")),
      let second = digits(2)
    else { return nil }

    var fraction = 0.0
    if skip(UInt8(ascii: ".")) {
      var value = 0
      var kept = 0
      var seen = 0
      while position < bytes.count, bytes[position] &- UInt8(ascii: "0") < 10 {
        if kept < 9 {
          value = value * 10 + Int(bytes[position] &- UInt8(ascii: "0"))
          kept += 1
        }
        seen += 1
        position += 1
      }
      guard seen > 0 else { return nil }
      var scale = 1.0
      for _ in 0..<kept { scale *= 10 }
      fraction = Double(value) / scale
    }

    var offsetSeconds = 0
    if skip(UInt8(ascii: "Z"), UInt8(ascii: "z")) {
      offsetSeconds = 0
    } else if position < bytes.count,
      bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-")
    {
      let negative = bytes[position] == UInt8(ascii: "-")
      position += 1
      guard let offsetHours = digits(2) else { return nil }
      var offsetMinutes = 0
      if position < bytes.count {
        _ = skip(UInt8(ascii: ":"))
        guard let minutes = digits(2) else { return nil }
        offsetMinutes = minutes
      }
      guard offsetHours <= 23, offsetMinutes <= 59 else { return nil }
      offsetSeconds = (offsetHours * 3600 + offsetMinutes * 60) * (negative ? -1 : 1)
    } else {
      return nil
    }
    guard position == bytes.count else { return nil }

    guard (1...12).contains(month), day >= 1, day <= daysInMonth(year: year, month: month),
      hour <= 23, minute <= 59, second <= 59
    else { return nil }

    let days = CivilDate.days(year: Int64(year), month: month, day: day)
    let seconds =
      days * secondsPerDay + Int64(hour * 3600 + minute * 60 + second) - Int64(offsetSeconds)
    return Date(timeIntervalSince1970: Double(seconds) + fraction)
  }

  private static func daysInMonth(year: Int, month: Int) -> Int {
    switch month {
    case 2:
      let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
      return leap ? 29 : 28
    case 4, 6, 9, 11: return 30
    default: return 31
    }
  }
}
