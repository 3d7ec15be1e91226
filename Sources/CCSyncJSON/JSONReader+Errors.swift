import CCSyncSystem

/// Building ``JSONParseError``s. Nothing here runs unless the input is bad.
extension JSONReader {
  package func error(_ kind: JSONParseError.Kind, _ message: String, at offset: Int) -> JSONParseError {
    JSONParseError(kind, message, at: offset, in: input)
  }

  /// The input ended: inside an open array or object that is what the error names.
  package func endOfInput() -> JSONParseError {
    guard frames.count > 0 else {
      return error(.unexpectedEndOfInput, "unexpected end of input", at: input.count)
    }
    let innermost = frames.top
    let what = innermost.isObject ? "object" : "array"
    return error(.unterminatedContainer, "unterminated \(what)", at: innermost.openOffset)
  }

  /// What JWCC has and strict JSON has not, found where the byte at `offset` did not fit: a
  /// comment or a trailing comma in strict JSON (the message says how to read the text as
  /// JWCC), an unterminated block comment in JWCC. `nil` for anything else.
  package func syntaxError(at offset: Int) -> JSONParseError? {
    guard offset < input.count else { return nil }
    let byte = input[offset]
    if byte == UInt8(ascii: "/"), offset + 1 < input.count,
      input[offset + 1] == UInt8(ascii: "/") || input[offset + 1] == UInt8(ascii: "*")
    {
      // In JWCC only a block comment can fail to be skipped: it never ends.
      if allowsJWCC { return error(.unterminatedComment, "unterminated block comment", at: offset) }
      return error(.comment, "comments are not JSON; \(JSONReader.jwccHint)", at: offset)
    }
    guard !allowsJWCC, frames.count > 0,
      byte == (frames.top.isObject ? UInt8(ascii: "}") : UInt8(ascii: "]"))
    else { return nil }
    var before = offset - 1
    while before > frames.top.openOffset, input[before] == 0x20 || input[before] == 0x0A || input[before] == 0x0D || input[before] == 0x09 {
      before -= 1
    }
    guard before > frames.top.openOffset, input[before] == UInt8(ascii: ",") else { return nil }
    return error(.trailingComma, "trailing comma is not JSON; \(JSONReader.jwccHint)", at: before)
  }

  /// How a user reads a file as JWCC instead, as the errors for comments and trailing commas
  /// say it.
  package static let jwccHint = "name the file .jsonc or .hujson, or pass --jsonc"

  /// The input ended inside the string whose opening quote is at `open`.
  package func unterminatedString(at open: Int) -> JSONParseError {
    error(.unterminatedString, "unterminated string", at: open)
  }

  /// A byte that does not fit where it stands; bytes that are not UTF-8 are named as such.
  package func unexpectedCharacter(at offset: Int) -> JSONParseError {
    if let syntaxError = syntaxError(at: offset) { return syntaxError }
    switch JSONReader.decodeScalar(in: input, at: offset) {
    case .scalar(let scalar, _):
      return error(.unexpectedCharacter,
                   "unexpected character \(JSONParseError.describe(scalar: scalar))", at: offset)
    case .invalid:
      return error(.invalidUTF8, "invalid UTF-8", at: offset)
    }
  }

  package func controlCharacter(at offset: Int) -> JSONParseError {
    let name = JSONParseError.describe(scalar: Unicode.Scalar(input[offset]))
    return error(.controlCharacterInString, "unescaped control character \(name) in string", at: offset)
  }

  package func invalidEscape(at offset: Int) -> JSONParseError {
    var end = offset + 1
    while end < input.count, end < offset + 6, input[end] >= 0x21, input[end] < 0x7F,
      input[end] != UInt8(ascii: "\"")
    {
      end += 1
    }
    let text = String(decoding: UnsafeBufferPointer(rebasing: input[offset..<end]), as: UTF8.self)
    return error(.invalidEscape, "invalid escape '\(text)' in string", at: offset)
  }

  package func loneSurrogate(_ unit: UInt16, at offset: Int) -> JSONParseError {
    let hex = String(unit, radix: 16, uppercase: true)
    return error(.loneSurrogate,
                 "lone surrogate '\\u\(hex)' in string (a Swift String cannot hold it)", at: offset)
  }

  package func invalidNumber(at start: Int) -> JSONParseError {
    var end = start
    while end < input.count, end < start + 40 {
      let byte = input[end]
      guard byte &- UInt8(ascii: "0") < 10 || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "+")
        || byte == UInt8(ascii: ".") || byte | 0x20 == UInt8(ascii: "e")
      else { break }
      end += 1
    }
    let text = String(decoding: UnsafeBufferPointer(rebasing: input[start..<end]), as: UTF8.self)
    return error(.invalidNumber, "invalid number '\(text)'", at: start)
  }

  /// The first ill-formed UTF-8 sequence between `start` and `end`; used after
  /// `String(validating:)` has said there is one.
  package func invalidUTF8(from start: Int, to end: Int) -> JSONParseError {
    var offset = start
    while offset < end {
      switch JSONReader.decodeScalar(in: UnsafeBufferPointer(rebasing: input[..<end]), at: offset) {
      case .scalar(_, let length): offset += length
      case .invalid: return error(.invalidUTF8, "invalid UTF-8", at: offset)
      }
    }
    // Not reached when both validators agree; still report the string rather than trap.
    return error(.invalidUTF8, "invalid UTF-8", at: start)
  }

  package enum DecodedScalar {
    case scalar(Unicode.Scalar, length: Int)
    case invalid
  }

  /// Decodes one scalar at `offset` with the well-formedness rules of Unicode table 3-7: no
  /// overlong forms, no surrogates, nothing above U+10FFFF, no truncated sequences.
  package static func decodeScalar(in bytes: UnsafeBufferPointer<UInt8>, at offset: Int) -> DecodedScalar {
    let lead = bytes[offset]
    if lead < 0x80 { return .scalar(Unicode.Scalar(lead), length: 1) }
    let length: Int
    var secondRange: ClosedRange<UInt8> = 0x80...0xBF
    var value: UInt32
    switch lead {
    case 0xC2...0xDF: length = 2; value = UInt32(lead & 0x1F)
    case 0xE0: length = 3; value = 0; secondRange = 0xA0...0xBF
    case 0xE1...0xEC, 0xEE...0xEF: length = 3; value = UInt32(lead & 0x0F)
    case 0xED: length = 3; value = 0x0D; secondRange = 0x80...0x9F
    case 0xF0: length = 4; value = 0; secondRange = 0x90...0xBF
    case 0xF1...0xF3: length = 4; value = UInt32(lead & 0x07)
    case 0xF4: length = 4; value = 4; secondRange = 0x80...0x8F
    default: return .invalid
    }
    guard offset + length <= bytes.count else { return .invalid }
    for index in 1..<length {
      let byte = bytes[offset + index]
      let range: ClosedRange<UInt8> = index == 1 ? secondRange : 0x80...0xBF
      guard range.contains(byte) else { return .invalid }
      value = value << 6 | UInt32(byte & 0x3F)
    }
    guard let scalar = Unicode.Scalar(value) else { return .invalid }
    return .scalar(scalar, length: length)
  }
}
