import CCSyncSystem

/// A schema's number limit (`minimum`, `multipleOf`, ...) taken apart once at compile time,
/// so that instance numbers compare with it exactly, whatever their spelling or size:
/// `1e400 > 1`, `0.0075` is a multiple of `0.0001`, `1.0 == 1`. A class, so that copying
/// the keyword that holds it is one reference count; `Sendable`: all `let`.
final class SchemaDecimal: Sendable {
  let number: JSONNumber
  let parts: DecimalParts
  /// The value when it is a plain integer, for the usual fast comparison.
  let integer: Int64?

  init(_ number: JSONNumber) {
    self.number = number
    self.parts = DecimalParts(number.text)
    self.integer = number.plainInt64Value
  }

  var isPositive: Bool { !parts.negative && !parts.digits.isEmpty }

  /// -1, 0 or 1 as `number` is less than, equal to or greater than this limit.
  func compare(_ number: JSONNumber) -> Int {
    if let integer, let other = number.plainInt64Value { return other < integer ? -1 : (other == integer ? 0 : 1) }
    return SchemaDecimal.compare(DecimalParts(number.text), parts)
  }

  /// -1, 0 or 1 as `left` is less than, equal to or greater than `right`.
  static func compare(_ left: DecimalParts, _ right: DecimalParts) -> Int {
    let leftSign = left.digits.isEmpty ? 0 : (left.negative ? -1 : 1)
    let rightSign = right.digits.isEmpty ? 0 : (right.negative ? -1 : 1)
    if leftSign != rightSign { return leftSign < rightSign ? -1 : 1 }
    if leftSign == 0 { return 0 }
    let magnitude = compareMagnitude(left, right)
    return leftSign > 0 ? magnitude : -magnitude
  }

  /// Compares absolute values: first by the place of the leading digit, then digit by digit.
  static func compareMagnitude(_ left: DecimalParts, _ right: DecimalParts) -> Int {
    let leftTop = left.digits.count + left.exponent
    let rightTop = right.digits.count + right.exponent
    if leftTop != rightTop { return leftTop < rightTop ? -1 : 1 }
    let length = max(left.digits.count, right.digits.count)
    for position in 0..<length {
      let a = position < left.digits.count ? left.digits[position] : UInt8(ascii: "0")
      let b = position < right.digits.count ? right.digits[position] : UInt8(ascii: "0")
      if a != b { return a < b ? -1 : 1 }
    }
    return 0
  }

  /// Whether `number` is an integer multiple of this (positive) divisor, exactly: both are
  /// scaled to integers by the same power of ten and the remainder is computed digit by
  /// digit modulo the divisor. Divisors of more than 19 significant digits fall back to
  /// `Double` division.
  func divides(_ number: JSONNumber) -> Bool {
    if let integer, integer > 0, let value = number.plainInt64Value { return value % integer == 0 }
    let dividend = DecimalParts(number.text)
    if dividend.digits.isEmpty { return true }
    // A non-zero number smaller in magnitude than the divisor is no multiple of it.
    if SchemaDecimal.compareMagnitude(dividend, parts) < 0 { return false }
    let common = min(dividend.exponent, parts.exponent)
    let divisorScale = parts.exponent - common
    guard parts.digits.count + divisorScale <= 19 else { return doubleDivides(number) }
    var divisor: UInt64 = 0
    for digit in parts.digits { divisor = divisor * 10 + UInt64(digit - UInt8(ascii: "0")) }
    for _ in 0..<divisorScale { divisor *= 10 }
    var remainder: UInt64 = 0
    for digit in dividend.digits {
      remainder = SchemaDecimal.multiplyModulo(remainder, 10, divisor)
      remainder = (remainder + UInt64(digit - UInt8(ascii: "0"))) % divisor
    }
    var power = dividend.exponent - common
    var base: UInt64 = 10 % divisor
    while power > 0, remainder != 0 {
      if power & 1 == 1 { remainder = SchemaDecimal.multiplyModulo(remainder, base, divisor) }
      base = SchemaDecimal.multiplyModulo(base, base, divisor)
      power >>= 1
    }
    return remainder == 0
  }

  private func doubleDivides(_ number: JSONNumber) -> Bool {
    let quotient = number.doubleValue / self.number.doubleValue
    guard quotient.isFinite, quotient != 0 else { return false }
    return abs(quotient - quotient.rounded()) < 1e-9 * max(1, abs(quotient))
  }

  private static func multiplyModulo(_ a: UInt64, _ b: UInt64, _ modulus: UInt64) -> UInt64 {
    let product = a.multipliedFullWidth(by: b)
    return modulus.dividingFullWidth((high: product.high, low: product.low)).remainder
  }
}

extension JSONNumber {
  /// Whether the number has no fractional part, whatever its spelling (`1.0`, `1e2`).
  var isIntegral: Bool {
    if plainInt64Value != nil { return true }
    let parts = DecimalParts(text)
    return parts.digits.isEmpty || parts.exponent >= 0
  }
}
