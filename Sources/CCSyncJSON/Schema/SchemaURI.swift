import CCSyncSystem

/// RFC 3986 reference resolution (section 5.2) and the fragment handling `$id` and `$ref`
/// need; no network, no normalisation beyond removing dot segments.
enum SchemaURI {
  /// The five parts of a URI reference; absent parts are `nil`, an empty path is `""`.
  struct Parts {
    var scheme: String?
    var authority: String?
    var path: String
    var query: String?
    var fragment: String?

    init(_ text: String) {
      var rest = Substring(text)
      if let hash = rest.firstIndex(of: "#") {
        fragment = String(rest[rest.index(after: hash)...])
        rest = rest[..<hash]
      }
      if let question = rest.firstIndex(of: "?") {
        query = String(rest[rest.index(after: question)...])
        rest = rest[..<question]
      }
      if let colon = rest.firstIndex(of: ":"), let first = rest.first, first.isASCII, first.isLetter,
        rest[..<colon].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "+" || $0 == "-" || $0 == ".") })
      {
        scheme = String(rest[..<colon])
        rest = rest[rest.index(after: colon)...]
      }
      if rest.hasPrefix("//") {
        let afterSlashes = rest.index(rest.startIndex, offsetBy: 2)
        let end = rest[afterSlashes...].firstIndex(of: "/") ?? rest.endIndex
        authority = String(rest[afterSlashes..<end])
        rest = rest[end...]
      }
      path = String(rest)
    }

    var text: String {
      var result = ""
      if let scheme { result += scheme + ":" }
      if let authority { result += "//" + authority }
      result += path
      if let query { result += "?" + query }
      if let fragment { result += "#" + fragment }
      return result
    }
  }

  /// `reference` resolved against `base`, as RFC 3986 section 5.2.2 says.
  static func resolve(_ reference: String, against base: String) -> String {
    let relative = Parts(reference)
    if relative.scheme != nil {
      var target = relative
      target.path = removeDotSegments(relative.path)
      return target.text
    }
    let baseParts = Parts(base)
    var target = relative
    target.scheme = baseParts.scheme
    if relative.authority == nil {
      target.authority = baseParts.authority
      if relative.path.isEmpty {
        target.path = baseParts.path
        target.query = relative.query ?? baseParts.query
      } else if relative.path.hasPrefix("/") {
        target.path = removeDotSegments(relative.path)
      } else {
        let merged: String
        if baseParts.authority != nil && baseParts.path.isEmpty {
          merged = "/" + relative.path
        } else if let slash = baseParts.path.lastIndex(of: "/") {
          merged = baseParts.path[...slash] + relative.path
        } else {
          merged = relative.path
        }
        target.path = removeDotSegments(merged)
      }
    } else {
      target.path = removeDotSegments(relative.path)
    }
    return target.text
  }

  /// The path without `.` and `..` segments (RFC 3986 section 5.2.4).
  static func removeDotSegments(_ path: String) -> String {
    guard path.contains(".") else { return path }
    let segments = path.split(separator: "/", omittingEmptySubsequences: false)
    let absolute = path.hasPrefix("/")
    var output: [Substring] = []
    for (position, segment) in segments.enumerated() {
      let last = position == segments.count - 1
      if segment == "." || segment == ".." {
        if segment == "..", output.count > (absolute ? 1 : 0) { output.removeLast() }
        if last { output.append("") }
      } else {
        output.append(segment)
      }
    }
    return output.joined(separator: "/")
  }

  /// `uri` split at its first `#`: the absolute part and the fragment (`""` when none).
  static func splitFragment(_ uri: String) -> (resource: String, fragment: String) {
    guard let hash = uri.firstIndex(of: "#") else { return (uri, "") }
    return (String(uri[..<hash]), String(uri[uri.index(after: hash)...]))
  }

  /// `text` with `%XX` escapes decoded; malformed escapes are kept as they are.
  static func percentDecoded(_ text: String) -> String {
    guard text.contains("%") else { return text }
    let bytes = Array(text.utf8)
    var output: [UInt8] = []
    var index = 0
    while index < bytes.count {
      if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count,
        let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2])
      {
        output.append(high << 4 | low)
        index += 3
      } else {
        output.append(bytes[index])
        index += 1
      }
    }
    return String(decoding: output, as: UTF8.self)
  }

  static func hexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
    default: return nil
    }
  }

  /// The tokens of a JSON Pointer (`/a/b~1c` → `["a", "b/c"]`), or `nil` when it does not
  /// start with `/` and is not empty.
  static func pointerTokens(_ pointer: String) -> [String]? {
    if pointer.isEmpty { return [] }
    guard pointer.hasPrefix("/") else { return nil }
    return pointer.dropFirst().split(separator: "/", omittingEmptySubsequences: false).map {
      $0.contains("~") ? String($0).replacing("~1", with: "/").replacing("~0", with: "~") : String($0)
    }
  }

  /// Tokens written as a JSON Pointer, `~` as `~0` and `/` as `~1`.
  static func pointer(_ tokens: [String]) -> String {
    var text = ""
    for token in tokens {
      text += "/"
      appendEscaped(token, to: &text)
    }
    return text
  }

  /// Appends `token` to a JSON Pointer, `~` as `~0` and `/` as `~1`. (`replacing(_:with:)`
  /// was most of the compile time: it searches generically, even when there is nothing to
  /// replace.)
  static func appendEscaped(_ token: String, to text: inout String) {
    guard token.utf8.contains(where: { $0 == UInt8(ascii: "~") || $0 == UInt8(ascii: "/") }) else {
      text += token
      return
    }
    for scalar in token.unicodeScalars {
      switch scalar {
      case "~": text += "~0"
      case "/": text += "~1"
      default: text.unicodeScalars.append(scalar)
      }
    }
  }
}
