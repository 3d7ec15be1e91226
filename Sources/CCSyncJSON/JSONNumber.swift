import CCSyncSystem

/// A JSON number kept as its exact text, so `12345678901234567890` and `1.50` print back the
/// way they were read.
///
/// Two numbers are equal when they denote the same decimal value, whatever their spelling:
/// `1.50 == 1.5`, `1e2 == 100`, `-0 == 0`. `Sendable`.
public struct JSONNumber: Sendable, Hashable, CustomStringConvertible {
  /// The number's text, always valid RFC 8259 number syntax.
  public let text: String

  /// Creates a number from text the caller has already checked against the RFC 8259 grammar
  /// (the parser does). Internal so that no invalid text can get in from outside.
  package init(uncheckedText text: String) {
    self.text = text
  }

  /// Creates a number from its text, or `nil` when the text is not a JSON number.
  public init?(text: String) {
    var copy = text
    guard copy.withUTF8({ JSONNumber.numberEnd(in: $0, from: 0) == $0.count }) else { return nil }
    self.text = text
  }

  /// Creates a number from an integer.
  public init<Integer: BinaryInteger>(_ value: Integer) {
    if let small = Int64(exactly: value) {
      self.text = JSONNumber.decimalText(magnitude: small.magnitude, negative: small < 0)
    } else if let large = UInt64(exactly: value) {
      self.text = JSONNumber.decimalText(magnitude: large, negative: false)
    } else {
      self.text = String(value)
    }
  }

  /// Creates a number from a signed integer, without the generic conversions of
  /// ``init(_:)-(Integer)`` (the encoder's hot path).
  package init(integer value: Int64) {
    self.text = JSONNumber.decimalText(magnitude: value.magnitude, negative: value < 0)
  }

  /// Creates a number from an unsigned integer.
  package init(integer value: UInt64) {
    self.text = JSONNumber.decimalText(magnitude: value, negative: false)
  }

  /// The decimal digits of an integer, written straight into the string's storage (at most
  /// 20 digits and a sign; up to 15 bytes make a small string, with no allocation). The
  /// generic `String(_:)` of an integer was a tenth of all encoding time.
  package static func decimalText(magnitude: UInt64, negative: Bool) -> String {
    let length = decimalLength(magnitude: magnitude, negative: negative)
    return String(unsafeUninitializedCapacity: length) { buffer in
      writeDecimal(magnitude: magnitude, negative: negative, length: length, to: buffer.baseAddress!)
      return length
    }
  }

  /// How many bytes ``writeDecimal(magnitude:negative:length:to:)`` writes.
  @inline(__always)
  package static func decimalLength(magnitude: UInt64, negative: Bool) -> Int {
    // Against rising powers of ten: a multiplication per digit instead of a division.
    var digits = 1
    var threshold: UInt64 = 10
    while magnitude >= threshold {
      digits += 1
      if digits == 20 { break }  // 10^19, the last power of ten a UInt64 holds, was passed
      threshold &*= 10
    }
    return digits + (negative ? 1 : 0)
  }

  /// Writes an integer's sign and digits to `output`, which has room for `length` bytes, the
  /// ``decimalLength(magnitude:negative:)`` of the same integer.
  @inline(__always)
  package static func writeDecimal(magnitude: UInt64, negative: Bool, length: Int, to output: UnsafeMutablePointer<UInt8>) {
    // Two digits per division, from a table of the pairs 00 to 99.
    let pairs: StaticString = "00010203040506070809101112131415161718192021222324252627282930313233343536373839404142434445464748495051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899"
    var value = magnitude
    var index = length
    while value >= 10 {
      let pair = Int(truncatingIfNeeded: value % 100) &* 2
      value /= 100
      index -= 2
      output[index] = pairs.utf8Start[pair]
      output[index + 1] = pairs.utf8Start[pair + 1]
    }
    if index > (negative ? 1 : 0) {
      index -= 1
      output[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value)
    }
    if negative { output[0] = UInt8(ascii: "-") }
  }

  /// Creates a number from a finite double, in the shortest text that reads back as the same
  /// double (`0.1` stays `0.1`). Integral values print without a fraction (`2.0` as `2`).
  /// Infinity and NaN have no JSON spelling: use ``init(exactly:)`` for values that may be
  /// non-finite; this initializer traps on them, like `Int(_: Double)` does on overflow.
  public init(_ value: Double) {
    precondition(value.isFinite, "JSON has no spelling for \(value)")
    switch JSONNumber.spelling(of: value) {
    case .negativeZero: self.text = "-0"
    case .integer(let integer): self.text = JSONNumber.decimalText(magnitude: integer.magnitude, negative: integer < 0)
    case .shortest: self.text = value.description
    }
  }

  /// How a finite double is spelled, for ``init(_:)-(Double)`` and the printer's
  /// ``JSONPrinter/writeDouble(_:)``, which must agree.
  package enum DoubleSpelling {
    /// `-0`, which reads back as negative zero (the integer would drop the sign).
    case negativeZero
    /// An integral value below 10^15, as that integer.
    case integer(Int64)
    /// Swift's shortest round-trip spelling (`0.1`, `1e-07`, `1.2345e+20`), valid JSON for
    /// finite values.
    case shortest
  }

  @inline(__always)
  package static func spelling(of value: Double) -> DoubleSpelling {
    if value == 0, value.sign == .minus { return .negativeZero }
    if value == value.rounded(), abs(value) < 1e15 { return .integer(Int64(value)) }
    return .shortest
  }

  /// Creates a number from a double, or `nil` when it is infinite or NaN.
  public init?(exactly value: Double) {
    guard value.isFinite else { return nil }
    self.init(value)
  }

  public var description: String { text }

  /// The value as a `Double` (the nearest one, as `Double(text)` reads it).
  public var doubleValue: Double { exactDoubleValue ?? Double(text) ?? .nan }

  /// The nearest `Double` for the common short decimal, without calling `strtod`; `nil` when
  /// the number needs the general algorithm.
  ///
  /// This is Clinger's fast path: a mantissa of at most 15 digits is exact in a `Double`, so
  /// is every power of ten up to 10^22, and one IEEE multiplication or division of two exact
  /// values is correctly rounded, so the result is the one `strtod` would give.
  package var exactDoubleValue: Double? {
    withBytes { bytes -> Double? in
      var mantissa: UInt64 = 0
      var digits = 0
      var scale = 0
      var negative = false
      var inFraction = false
      for byte in bytes {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"):
          if mantissa != 0 || byte != UInt8(ascii: "0") { digits += 1 }
          guard digits <= 15 else { return nil }
          mantissa = mantissa &* 10 &+ UInt64(byte &- UInt8(ascii: "0"))
          if inFraction { scale -= 1 }
        case UInt8(ascii: "-"):
          negative = true
        case UInt8(ascii: "."):
          inFraction = true
        default:
          // An exponent: rare in configuration files, left to the general algorithm.
          return nil
        }
      }
      guard scale >= -22 else { return nil }
      let magnitude = scale == 0 ? Double(mantissa) : Double(mantissa) / JSONNumber.powersOfTen[-scale]
      return negative ? -magnitude : magnitude
    }
  }

  /// The value when the text is a plain integer (`-?[0-9]+`) of at most 18 digits, which
  /// always fits in `Int64`; `nil` for anything else, including integers spelled with a
  /// fraction or an exponent.
  package var plainInt64Value: Int64? {
    withBytes { bytes -> Int64? in
      var index = 0
      let negative = bytes.first == UInt8(ascii: "-")
      if negative { index = 1 }
      guard bytes.count > index, bytes.count - index <= 18 else { return nil }
      var magnitude: Int64 = 0
      while index < bytes.count {
        let digit = bytes[index] &- UInt8(ascii: "0")
        guard digit < 10 else { return nil }
        magnitude = magnitude &* 10 &+ Int64(digit)
        index += 1
      }
      return negative ? -magnitude : magnitude
    }
  }

  /// The value when the text is a plain non-negative integer that fits in `UInt64`.
  package var plainUInt64Value: UInt64? {
    withBytes { bytes -> UInt64? in
      guard !bytes.isEmpty, bytes.count <= 20 else { return nil }
      var value: UInt64 = 0
      for byte in bytes {
        let digit = byte &- UInt8(ascii: "0")
        guard digit < 10 else { return nil }
        let (shifted, overflow) = value.multipliedReportingOverflow(by: 10)
        let (sum, carry) = shifted.addingReportingOverflow(UInt64(digit))
        guard !overflow, !carry else { return nil }
        value = sum
      }
      return value
    }
  }

  /// Runs `body` on the UTF-8 bytes of ``text`` in place (a short number is a small string,
  /// whose bytes are copied to the stack, not to the heap).
  @inline(__always)
  private func withBytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result?) -> Result? {
    if let result = text.utf8.withContiguousStorageIfAvailable(body) { return result }
    return Array(text.utf8).withUnsafeBufferPointer(body)
  }

  /// 10^0 through 10^22, every one exact in a `Double`.
  private static let powersOfTen: [Double] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
    1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
  ]

  /// The value as an `Int64` when it is an integer that fits, whatever the spelling (`1e3`,
  /// `10.0`); otherwise `nil`.
  public var int64Value: Int64? {
    if let value = Int64(text) { return value }
    let decimal = DecimalParts(text)
    return decimal.int64Value
  }

  /// The value as a `UInt64` when it is a non-negative integer that fits; otherwise `nil`.
  public var uint64Value: UInt64? {
    if let value = UInt64(text) { return value }
    let decimal = DecimalParts(text)
    return decimal.uint64Value
  }

  public static func == (lhs: JSONNumber, rhs: JSONNumber) -> Bool {
    if lhs.text == rhs.text { return true }
    // Plain integers, the usual numbers, compare without taking their texts apart.
    if let left = lhs.plainInt64Value, let right = rhs.plainInt64Value { return left == right }
    return DecimalParts(lhs.text) == DecimalParts(rhs.text)
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(DecimalParts(text))
  }

  /// Where the number that starts at `start` in `bytes` ends, or `nil` when none does: RFC
  /// 8259's `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, and a zero followed by
  /// a digit is no number (not a `0` followed by something else). The parser's grammar, and
  /// ``init(text:)``'s.
  package static func numberEnd(in bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int? {
    var index = start
    @inline(__always) func isDigit(_ offset: Int) -> Bool {
      offset < bytes.count && bytes[offset] &- UInt8(ascii: "0") < 10
    }
    if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
    guard isDigit(index) else { return nil }
    if bytes[index] == UInt8(ascii: "0") {
      index += 1
      if isDigit(index) { return nil }
    } else {
      while isDigit(index) { index += 1 }
    }
    if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
      index += 1
      guard isDigit(index) else { return nil }
      while isDigit(index) { index += 1 }
    }
    if index < bytes.count, bytes[index] | 0x20 == UInt8(ascii: "e") {
      index += 1
      if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
      guard isDigit(index) else { return nil }
      while isDigit(index) { index += 1 }
    }
    return index
  }
}

/// A number's decimal value in a normal form: sign, significant digits without leading or
/// trailing zeros, and the power of ten of the last digit. Used to compare spellings.
package struct DecimalParts: Hashable {
  package var negative: Bool
  package var digits: [UInt8]
  package var exponent: Int

  package init(_ text: String) {
    var negative = false
    var digits: [UInt8] = []
    var exponent = 0
    var fractionDigits = 0
    var inFraction = false
    var utf8 = text.utf8.makeIterator()
    var exponentText: [UInt8] = []
    var inExponent = false
    while let byte = utf8.next() {
      if inExponent { exponentText.append(byte); continue }
      switch byte {
      case UInt8(ascii: "-"): negative = true
      case UInt8(ascii: "."): inFraction = true
      case UInt8(ascii: "e"), UInt8(ascii: "E"): inExponent = true
      default:
        if digits.isEmpty && byte == UInt8(ascii: "0") {
          if inFraction { fractionDigits += 1 }
          continue
        }
        digits.append(byte)
        if inFraction { fractionDigits += 1 }
      }
    }
    if !exponentText.isEmpty {
      // Exponents are clamped to a quarter of Int's range (and beyond Int's range to that),
      // so that the arithmetic below and the callers' (digit count plus exponent) cannot
      // overflow; such numbers compare by their clamped value.
      let limit = Int.max / 4
      let parsed = Int(String(decoding: exponentText, as: UTF8.self)) ?? (exponentText.first == UInt8(ascii: "-") ? -limit : limit)
      exponent = min(max(parsed, -limit), limit)
    }
    exponent -= fractionDigits
    while let last = digits.last, last == UInt8(ascii: "0") {
      digits.removeLast()
      exponent += 1
    }
    if digits.isEmpty {
      negative = false
      exponent = 0
    }
    self.negative = negative
    self.digits = digits
    self.exponent = exponent
  }

  package var uint64Value: UInt64? {
    guard !negative, exponent >= 0, digits.count + exponent <= 20 else { return digits.isEmpty ? 0 : nil }
    var value: UInt64 = 0
    for digit in digits {
      let (m, o1) = value.multipliedReportingOverflow(by: 10)
      let (a, o2) = m.addingReportingOverflow(UInt64(digit - UInt8(ascii: "0")))
      if o1 || o2 { return nil }
      value = a
    }
    for _ in 0..<exponent {
      let (m, o) = value.multipliedReportingOverflow(by: 10)
      if o { return nil }
      value = m
    }
    return value
  }

  package var int64Value: Int64? {
    let magnitude: UInt64?
    if negative {
      var positive = self
      positive.negative = false
      magnitude = positive.uint64Value
    } else {
      magnitude = uint64Value
    }
    guard let magnitude else { return nil }
    if negative {
      if magnitude == UInt64(Int64.max) + 1 { return Int64.min }
      guard magnitude <= UInt64(Int64.max) else { return nil }
      return -Int64(magnitude)
    }
    guard magnitude <= UInt64(Int64.max) else { return nil }
    return Int64(magnitude)
  }
}
