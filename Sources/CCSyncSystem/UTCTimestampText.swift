/// UTC timestamps as ISO 8601 text, the date computed with ``CivilDate`` rather than taken
/// from `gmtime_r` (whose first call in a process reads `/etc/localtime`): the one writer
/// behind history and write-stamp times, conflict copies' names and the JSON coder's dates.
/// `Sendable`: no state.
package enum UTCTimestampText {
  /// How the parts are joined.
  package enum Style: Sendable {
    /// `2026-11-29T21:05:24`: for text people and parsers read.
    case extended
    /// `20261129T210524`: for file names.
    case basic
  }

  /// `seconds` since 1970 in UTC, then `.` and `fraction` written in `fractionDigits` digits
  /// (none when `fractionDigits` is 0), then `Z`. A year outside 0000 to 9999 is written as
  /// its number (callers that must refuse one check first).
  package static func text(seconds: Int64, fraction: Int = 0, fractionDigits: Int = 0, style: Style = .extended) -> String {
    var text = [UInt8]()
    text.reserveCapacity(32)
    append(seconds: seconds, fraction: fraction, fractionDigits: fractionDigits, style: style, to: &text)
    return String(decoding: text, as: UTF8.self)
  }

  /// Appends ``text(seconds:fraction:fractionDigits:style:)``'s text to `text`, for a caller
  /// building bytes (a file history's log line) without a string in between.
  package static func append(
    seconds: Int64, fraction: Int = 0, fractionDigits: Int = 0, style: Style = .extended, to text: inout [UInt8]
  ) {
    var days = seconds / 86_400
    var secondOfDay = Int(seconds % 86_400)
    if secondOfDay < 0 {
      secondOfDay += 86_400
      days -= 1
    }
    let (year, month, day) = CivilDate.date(fromDays: days)
    let dateSeparator: UInt8? = style == .extended ? UInt8(ascii: "-") : nil
    let timeSeparator: UInt8? = style == .extended ? UInt8(ascii: ":") : nil
    if !(0...9999).contains(year) { text += String(year).utf8 }
    // Written into a buffer on the stack, then appended at once: a file history writes one a
    // write, and an append a digit cost more than the digits.
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 24 + max(0, fractionDigits)) { buffer in
      var count = 0
      func put(_ value: Int, digits: Int) {
        var rest = value
        var index = count + digits - 1
        while index >= count {
          buffer[index] = UInt8(ascii: "0") + UInt8(rest % 10)
          rest /= 10
          index -= 1
        }
        count += digits
      }
      func put(_ byte: UInt8?) {
        guard let byte else { return }
        buffer[count] = byte
        count += 1
      }
      if (0...9999).contains(year) { put(Int(year), digits: 4) }
      put(dateSeparator)
      put(month, digits: 2)
      put(dateSeparator)
      put(day, digits: 2)
      put(UInt8(ascii: "T"))
      put(secondOfDay / 3600, digits: 2)
      put(timeSeparator)
      put(secondOfDay / 60 % 60, digits: 2)
      put(timeSeparator)
      put(secondOfDay % 60, digits: 2)
      if fractionDigits > 0 {
        put(UInt8(ascii: "."))
        put(fraction, digits: fractionDigits)
      }
      put(UInt8(ascii: "Z"))
      text.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[..<count]))
    }
  }
}
