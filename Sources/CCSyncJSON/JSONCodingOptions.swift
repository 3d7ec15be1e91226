import CCSyncSystem
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension JSONValueEncoder {
  /// How a `Date` becomes JSON. `Sendable`.
  public enum DateEncodingStrategy: Sendable {
    /// An ISO 8601 string in UTC: `2026-11-29T21:05:24Z`, with fractional seconds when the
    /// date has any (`2026-11-29T21:05:24.123Z`, up to microseconds, trailing zeros
    /// dropped). The default. Dates outside the years 0000 to 9999 throw
    /// `EncodingError.invalidValue`.
    case iso8601
    /// Seconds since 1970-01-01T00:00:00Z, as a number (fractions kept).
    case secondsSince1970
    /// Milliseconds since 1970-01-01T00:00:00Z, as a number (fractions kept).
    case millisecondsSince1970
    /// Whatever `Date.encode(to:)` writes: seconds since 2001-01-01T00:00:00Z.
    case deferredToDate
    /// The closure encodes the date into the encoder it is given. A closure that encodes
    /// nothing produces an empty object, as Foundation's `JSONEncoder` does.
    case custom(@Sendable (Date, any Encoder) throws -> Void)
  }

  /// How `Data` becomes JSON. `Sendable`.
  public enum DataEncodingStrategy: Sendable {
    /// A base64 string (RFC 4648, with padding). The default.
    case base64
    /// Whatever `Data.encode(to:)` writes: an array of byte values.
    case deferredToData
    /// The closure encodes the bytes into the encoder it is given. A closure that encodes
    /// nothing produces an empty object.
    case custom(@Sendable (Data, any Encoder) throws -> Void)
  }

  /// What to do with infinite and NaN floating-point values, which JSON cannot spell.
  /// `Sendable`.
  public enum NonConformingFloatEncodingStrategy: Sendable, Equatable {
    /// Throw `EncodingError.invalidValue` naming the coding path. The default.
    case `throw`
    /// Write the given strings instead, e.g. `"Infinity"`, `"-Infinity"`, `"NaN"`.
    case convertToString(positiveInfinity: String, negativeInfinity: String, nan: String)
  }
}

extension JSONValueDecoder {
  /// How a `Date` is read from JSON. `Sendable`.
  public enum DateDecodingStrategy: Sendable {
    /// An ISO 8601 / RFC 3339 string: `2026-11-29T21:05:24Z`, with or without fractional
    /// seconds, with `Z` or a `+hh:mm` / `-hh:mm` offset. The default.
    case iso8601
    /// A number of seconds since 1970-01-01T00:00:00Z.
    case secondsSince1970
    /// A number of milliseconds since 1970-01-01T00:00:00Z.
    case millisecondsSince1970
    /// Whatever `Date.init(from:)` reads: seconds since 2001-01-01T00:00:00Z.
    case deferredToDate
    /// The closure reads the date from the decoder it is given.
    case custom(@Sendable (any Decoder) throws -> Date)
  }

  /// How `Data` is read from JSON. `Sendable`.
  public enum DataDecodingStrategy: Sendable {
    /// A base64 string (RFC 4648, padding required). The default.
    case base64
    /// Whatever `Data.init(from:)` reads: an array of byte values.
    case deferredToData
    /// The closure reads the bytes from the decoder it is given.
    case custom(@Sendable (any Decoder) throws -> Data)
  }

  /// Which strings stand for infinite and NaN floating-point values. `Sendable`.
  public enum NonConformingFloatDecodingStrategy: Sendable, Equatable {
    /// Only JSON numbers decode as floating-point values. The default.
    case `throw`
    /// These strings decode as infinity, negative infinity and NaN.
    case convertFromString(positiveInfinity: String, negativeInfinity: String, nan: String)
  }
}
