import CCSyncSystem

/// The `format` values checked when ``JSONSchema/Options/assertFormats`` is on; any other
/// format stays an annotation. Checks follow the RFCs the specification names (RFC 3339 for
/// dates and times, RFC 5321 for e-mail, RFC 1123 for host names, RFC 3986 for URIs, RFC 4122
/// for UUIDs, RFC 6901 for JSON Pointers), without IDN or Punycode rules.
enum SchemaFormat: String, Sendable, CaseIterable {
  case dateTime = "date-time"
  case date
  case time
  case duration
  case email
  case hostname
  case ipv4
  case ipv6
  case uri
  case uriReference = "uri-reference"
  case uuid
  case jsonPointer = "json-pointer"
  case regex

  /// Whether `string` is valid in this format.
  func accepts(_ string: String) -> Bool {
    let bytes = Array(string.utf8)
    switch self {
    case .dateTime:
      guard bytes.count > 11, bytes[10] | 0x20 == UInt8(ascii: "t") else { return false }
      return SchemaFormat.isDate(bytes[..<10]) && SchemaFormat.isTime(bytes[11...])
    case .date: return SchemaFormat.isDate(bytes[...])
    case .time: return SchemaFormat.isTime(bytes[...])
    case .duration: return SchemaFormat.isDuration(bytes)
    case .email: return SchemaFormat.isEmail(bytes)
    case .hostname: return SchemaFormat.isHostname(bytes[...])
    case .ipv4: return SchemaFormat.isIPv4(bytes[...])
    case .ipv6: return SchemaFormat.isIPv6(bytes[...])
    case .uri: return SchemaFormat.isURIReference(bytes, absolute: true)
    case .uriReference: return SchemaFormat.isURIReference(bytes, absolute: false)
    case .uuid: return SchemaFormat.isUUID(bytes)
    case .jsonPointer: return SchemaFormat.isJSONPointer(bytes)
    case .regex: return (try? SchemaPattern(string)) != nil
    }
  }

  private static func isDigit(_ byte: UInt8) -> Bool { byte &- UInt8(ascii: "0") < 10 }

  private static func isHex(_ byte: UInt8) -> Bool { SchemaURI.hexValue(byte) != nil }

  /// The value of exactly `count` digits at `start`, or `nil`.
  private static func number(_ bytes: ArraySlice<UInt8>, _ start: Int, _ count: Int) -> Int? {
    guard start + count <= bytes.endIndex else { return nil }
    var value = 0
    for index in start..<start + count {
      guard isDigit(bytes[index]) else { return nil }
      value = value * 10 + Int(bytes[index] - UInt8(ascii: "0"))
    }
    return value
  }

  /// RFC 3339 `full-date`: `YYYY-MM-DD`, a real day of the Gregorian calendar.
  static func isDate(_ bytes: ArraySlice<UInt8>) -> Bool {
    let start = bytes.startIndex
    guard bytes.count == 10, bytes[start + 4] == UInt8(ascii: "-"), bytes[start + 7] == UInt8(ascii: "-"),
      let year = number(bytes, start, 4), let month = number(bytes, start + 5, 2), let day = number(bytes, start + 8, 2),
      (1...12).contains(month), day >= 1
    else { return false }
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
    let lengths = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
    return day <= lengths[month - 1]
  }

  /// RFC 3339 `full-time`: `hh:mm:ss`, optional fraction, then `Z` or `±hh:mm`; a leap
  /// second only at 23:59:60 UTC.
  static func isTime(_ bytes: ArraySlice<UInt8>) -> Bool {
    let start = bytes.startIndex
    guard bytes.count >= 9, bytes[start + 2] == UInt8(ascii: ":"), bytes[start + 5] == UInt8(ascii: ":"),
      let hour = number(bytes, start, 2), let minute = number(bytes, start + 3, 2), let second = number(bytes, start + 6, 2),
      hour < 24, minute < 60, second <= 60
    else { return false }
    var index = start + 8
    if bytes[index] == UInt8(ascii: ".") {
      index += 1
      let digits = index
      while index < bytes.endIndex, isDigit(bytes[index]) { index += 1 }
      guard index > digits, index < bytes.endIndex else { return false }
    }
    var offsetMinutes = 0
    if bytes[index] | 0x20 == UInt8(ascii: "z") {
      guard index + 1 == bytes.endIndex else { return false }
    } else {
      guard bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-"), index + 6 == bytes.endIndex,
        bytes[index + 3] == UInt8(ascii: ":"), let offsetHour = number(bytes, index + 1, 2),
        let offsetMinute = number(bytes, index + 4, 2), offsetHour < 24, offsetMinute < 60
      else { return false }
      offsetMinutes = (offsetHour * 60 + offsetMinute) * (bytes[index] == UInt8(ascii: "+") ? 1 : -1)
    }
    if second == 60 {
      let utc = ((hour * 60 + minute - offsetMinutes) % 1440 + 1440) % 1440
      return utc == 23 * 60 + 59
    }
    return true
  }

  /// RFC 3339 appendix A `duration`: `P` then date units in the order Y M D (no gaps), or
  /// weeks alone, then optionally `T` and H M S (no gaps).
  static func isDuration(_ bytes: [UInt8]) -> Bool {
    guard bytes.first == UInt8(ascii: "P"), bytes.count > 1 else { return false }
    var index = 1
    func components(_ units: [UInt8]) -> [UInt8]? {
      var found: [UInt8] = []
      while index < bytes.count, isDigit(bytes[index]) {
        while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        guard index < bytes.count, let unit = units.firstIndex(of: bytes[index]) else { return nil }
        if let last = found.last, let lastUnit = units.firstIndex(of: last), lastUnit >= unit { return nil }
        found.append(bytes[index])
        index += 1
      }
      return found
    }
    guard let date = components(Array("YMDW".utf8)) else { return false }
    if date.contains(UInt8(ascii: "W")) { return date.count == 1 && index == bytes.count }
    if !isContiguous(date, Array("YMD".utf8)) { return false }
    if index == bytes.count { return !date.isEmpty }
    guard bytes[index] == UInt8(ascii: "T") else { return false }
    index += 1
    guard let time = components(Array("HMS".utf8)), !time.isEmpty, index == bytes.count else { return false }
    return isContiguous(time, Array("HMS".utf8))
  }

  /// Whether `found` (in order) leaves no unit of `units` out between its first and last.
  private static func isContiguous(_ found: [UInt8], _ units: [UInt8]) -> Bool {
    guard let first = found.first, let start = units.firstIndex(of: first) else { return true }
    return Array(units[start..<min(units.count, start + found.count)]) == found
  }

  static func isEmail(_ bytes: [UInt8]) -> Bool {
    guard let at = bytes.lastIndex(of: UInt8(ascii: "@")), at > 0, at < bytes.count - 1 else { return false }
    let local = bytes[..<at]
    let domain = bytes[(at + 1)...]
    if local.first == UInt8(ascii: "\"") {
      guard local.count >= 2, local.last == UInt8(ascii: "\"") else { return false }
    } else {
      let allowed = Array("!#$%&'*+-/=?^_`{|}~".utf8)
      guard local.first != UInt8(ascii: "."), local.last != UInt8(ascii: "."),
        !zip(local, local.dropFirst()).contains(where: { $0 == UInt8(ascii: ".") && $1 == UInt8(ascii: ".") }),
        local.allSatisfy({ isAlphanumeric($0) || $0 == UInt8(ascii: ".") || allowed.contains($0) })
      else { return false }
    }
    if domain.first == UInt8(ascii: "["), domain.last == UInt8(ascii: "]") {
      let literal = domain.dropFirst().dropLast()
      let prefix = Array("IPv6:".utf8)
      if literal.starts(with: prefix) { return isIPv6(literal.dropFirst(prefix.count)) }
      return isIPv4(literal)
    }
    return isHostname(domain)
  }

  private static func isAlphanumeric(_ byte: UInt8) -> Bool {
    isDigit(byte) || (byte | 0x20) &- UInt8(ascii: "a") < 26
  }

  /// RFC 1123 host names: dot-separated labels of 1 to 63 letters, digits and inner hyphens,
  /// at most 253 bytes in all.
  static func isHostname(_ bytes: ArraySlice<UInt8>) -> Bool {
    guard !bytes.isEmpty, bytes.count <= 253 else { return false }
    for label in bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false) {
      guard !label.isEmpty, label.count <= 63, label.first != UInt8(ascii: "-"), label.last != UInt8(ascii: "-"),
        label.allSatisfy({ isAlphanumeric($0) || $0 == UInt8(ascii: "-") })
      else { return false }
      if label.count >= 4, label[label.startIndex + 2] == UInt8(ascii: "-"), label[label.startIndex + 3] == UInt8(ascii: "-"),
        !(label[label.startIndex] | 0x20 == UInt8(ascii: "x") && label[label.startIndex + 1] | 0x20 == UInt8(ascii: "n"))
      {
        return false
      }
    }
    return true
  }

  /// Four decimal octets without leading zeros.
  static func isIPv4(_ bytes: ArraySlice<UInt8>) -> Bool {
    let parts = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
    return parts.count == 4 && parts.allSatisfy { part in
      guard (1...3).contains(part.count), part.allSatisfy(isDigit), part.count == 1 || part.first != UInt8(ascii: "0") else { return false }
      return Int(String(decoding: part, as: UTF8.self))! <= 255
    }
  }

  /// RFC 4291 text form: eight groups of up to four hex digits, one `::` for a run of zero
  /// groups, and optionally an IPv4 address for the last two.
  static func isIPv6(_ bytes: ArraySlice<UInt8>) -> Bool {
    let text = Array(bytes)
    var groups = text.split(separator: UInt8(ascii: ":"), omittingEmptySubsequences: false).map { Array($0) }
    var limit = 8
    if let last = groups.last, last.contains(UInt8(ascii: ".")) {
      guard isIPv4(last[...]) else { return false }
      groups.removeLast()
      groups.append([UInt8(ascii: "0")])  // placeholder: the IPv4 part counts as two groups
      limit = 7
    }
    let doubleColons = zip(text, text.dropFirst()).filter { $0 == UInt8(ascii: ":") && $1 == UInt8(ascii: ":") }.count
    guard doubleColons <= 1 else { return false }
    if doubleColons == 1 {
      // Empty groups only where the `::` stands (two at either end, one in the middle).
      var trimmed = groups
      if trimmed.first == [] && trimmed.count > 1 && trimmed[1] == [] { trimmed.removeFirst() }
      if trimmed.last == [] && trimmed.count > 1 && trimmed[trimmed.count - 2] == [] { trimmed.removeLast() }
      let empties = trimmed.filter(\.isEmpty).count
      guard empties == 1 else { return false }
      let filled = trimmed.filter { !$0.isEmpty }
      return filled.count < limit && filled.allSatisfy { $0.count <= 4 && $0.allSatisfy(isHex) }
    }
    return groups.count == limit && groups.allSatisfy { !$0.isEmpty && $0.count <= 4 && $0.allSatisfy(isHex) }
  }

  /// RFC 3986 syntax: allowed characters only, well-formed `%XX`, a valid scheme when there
  /// is one (required when `absolute`), a numeric port.
  static func isURIReference(_ bytes: [UInt8], absolute: Bool) -> Bool {
    let allowed = Array("-._~:/?#[]@!$&'()*+,;=%".utf8)
    var index = 0
    while index < bytes.count {
      let byte = bytes[index]
      guard isAlphanumeric(byte) || allowed.contains(byte) else { return false }
      if byte == UInt8(ascii: "%") {
        guard index + 2 < bytes.count, isHex(bytes[index + 1]), isHex(bytes[index + 2]) else { return false }
        index += 2
      }
      index += 1
    }
    let text = String(decoding: bytes, as: UTF8.self)
    let parts = SchemaURI.Parts(text)
    if absolute {
      guard let scheme = parts.scheme, let first = scheme.utf8.first, (first | 0x20) &- UInt8(ascii: "a") < 26 else { return false }
    } else if parts.scheme == nil, let colon = parts.path.firstIndex(of: ":") {
      // A relative reference's first segment cannot hold a colon (it would read as a scheme).
      if !parts.path[..<colon].contains("/") { return false }
    }
    if let authority = parts.authority {
      var host = Substring(authority)
      if let at = host.firstIndex(of: "@") {
        // One `@` ends the user information, which cannot hold brackets or another `@`.
        guard !host[host.index(after: at)...].contains("@"), !host[..<at].contains("["), !host[..<at].contains("]") else { return false }
        host = host[host.index(after: at)...]
      }
      if host.hasPrefix("[") {
        guard let close = host.firstIndex(of: "]") else { return false }
        let literal = host[host.index(after: host.startIndex)..<close]
        if !literal.hasPrefix("v") && !literal.hasPrefix("V") && !isIPv6(ArraySlice(literal.utf8)) { return false }
        host = host[host.index(after: close)...]
        if !host.isEmpty && !host.hasPrefix(":") { return false }
      } else if host.contains("[") || host.contains("]") {
        return false
      }
      if let colon = host.lastIndex(of: ":") {
        guard host[host.index(after: colon)...].allSatisfy({ $0.isASCII && $0.isNumber }) else { return false }
      }
    }
    if parts.path.contains("[") || parts.path.contains("]") { return false }
    return true
  }

  /// `8-4-4-4-12` hex digits.
  static func isUUID(_ bytes: [UInt8]) -> Bool {
    guard bytes.count == 36 else { return false }
    for (index, byte) in bytes.enumerated() {
      if [8, 13, 18, 23].contains(index) {
        guard byte == UInt8(ascii: "-") else { return false }
      } else if !isHex(byte) {
        return false
      }
    }
    return true
  }

  /// RFC 6901: empty, or `/`-prefixed tokens where `~` is followed by `0` or `1`.
  static func isJSONPointer(_ bytes: [UInt8]) -> Bool {
    if bytes.isEmpty { return true }
    guard bytes.first == UInt8(ascii: "/") else { return false }
    for (index, byte) in bytes.enumerated() where byte == UInt8(ascii: "~") {
      guard index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "0") || bytes[index + 1] == UInt8(ascii: "1") else { return false }
    }
    return true
  }
}
