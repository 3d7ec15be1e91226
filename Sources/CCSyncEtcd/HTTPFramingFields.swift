/// The fields of a response head that say how its body is delimited and whether the
/// connection stays open (RFC 9112 sections 6.3 and 9.6), gathered line by line as the head is
/// read. Every other field is checked for its syntax and skipped: no caller reads them, and
/// making a `String` of each field's name and value (etcd's gateway sends 7 or 8) was most of
/// the cost of reading a head. `Sendable`.
struct HTTPFramingFields: Sendable {
  /// Whether the last coding of the first `Transfer-Encoding` field is `chunked`; `nil`
  /// without such a field.
  private(set) var endsInChunked: Bool?
  /// The first `Content-Length` value, as sent.
  private(set) var contentLength: String?
  /// The values of the `Content-Length` fields after the first (a valid head has none, or the
  /// same value again).
  private(set) var moreContentLengths: [String] = []
  /// Whether a `Connection` field names `close`.
  private(set) var closesConnection = false

  /// Takes in one line of the head; `false` when it is not a field
  /// (``HTTPHeadSyntax/field(_:)``).
  mutating func add(_ line: ArraySlice<UInt8>) -> Bool {
    guard let colon = HTTPHeadSyntax.fieldColon(line) else { return false }
    let name = line[..<colon]
    var value: ArraySlice<UInt8> { HTTPHeadSyntax.trimmingBlanks(line[(colon + 1)...]) }
    // Told apart by length first: most fields are none of the three.
    switch name.count {
    case 10 where HTTPHeadSyntax.isLowercase(name, ignoringCase: Self.connection):
      if HTTPHeadSyntax.contains(value, lowercaseWord: Self.close) { closesConnection = true }
    case 14 where HTTPHeadSyntax.isLowercase(name, ignoringCase: Self.contentLengthName):
      let text = String(decoding: value, as: UTF8.self)
      if contentLength == nil { contentLength = text } else { moreContentLengths.append(text) }
    case 17 where HTTPHeadSyntax.isLowercase(name, ignoringCase: Self.transferEncoding):
      if endsInChunked == nil { endsInChunked = HTTPHeadSyntax.endsInChunked(value) }
    default:
      break
    }
    return true
  }

  /// How the body after a head with these fields and `status` is delimited, or `nil` when its
  /// `Content-Length` fields are not one decimal number (``contentLengthsText``).
  func framing(status: Int) -> HTTPBodyFraming? {
    if status == 204 || status == 304 { return .length(0) }
    if let endsInChunked { return endsInChunked ? .chunked : .untilClose }
    guard let contentLength else { return .untilClose }
    guard moreContentLengths.allSatisfy({ $0 == contentLength }), let length = HTTPHeadSyntax.decimal(contentLength) else {
      return nil
    }
    return .length(length)
  }

  /// The distinct `Content-Length` values for a message: `12, 13`.
  var contentLengthsText: String {
    Set((contentLength.map { [$0] } ?? []) + moreContentLengths).sorted().joined(separator: ", ")
  }

  private static let connection = Array("connection".utf8)
  private static let close = Array("close".utf8)
  private static let contentLengthName = Array("content-length".utf8)
  private static let transferEncoding = Array("transfer-encoding".utf8)
}
