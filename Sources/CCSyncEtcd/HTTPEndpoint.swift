import CCSyncJSON
import CCSyncSystem

/// Where an HTTP server listens: a host, a port and whether it speaks TLS, parsed from the
/// forms people write in configuration: `127.0.0.1:2379`, `http://127.0.0.1:2379`,
/// `https://etcd.example:2379`, `localhost:2379`, `[::1]:2379`, `http://[::1]:2379/`.
/// `Sendable`.
package struct HTTPEndpoint: Sendable, Hashable, CustomStringConvertible {
  /// The host: an IP literal (IPv6 without its brackets) or a name.
  package let host: String
  /// The TCP port, 1 to 65535.
  package let port: Int
  /// Whether the server speaks TLS (`https://`): then its certificate must name ``host``.
  package let isSecure: Bool
  /// `host:port`, with brackets around an IPv6 address: the form errors and the `Host`
  /// header use. Made once: every call names its endpoint, in its `Host` header and in the
  /// answer it returns.
  package let description: String

  /// Creates an endpoint from its parts; `host` is not checked beyond what `connect` does.
  package init(host: String, port: Int, isSecure: Bool = false) {
    self.host = host
    self.port = port
    self.isSecure = isSecure
    description = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
  }

  /// Parses `text` in one of the forms above.
  /// - Parameters:
  ///   - text: the endpoint as configured; surrounding spaces are ignored.
  ///   - defaultPort: the port when `text` names none (`localhost`, `http://10.0.0.1`);
  ///     `nil` makes the port required.
  ///   - secureByDefault: whether an endpoint without a scheme speaks TLS (`http://` never
  ///     does, `https://` always).
  /// - Throws: ``HTTPError/invalidEndpoint(_:reason:)`` saying what is wrong: a scheme other
  ///   than `http` and `https`, a path, a bad port, an empty host.
  package init(parsing text: String, defaultPort: Int? = nil, secureByDefault: Bool = false) throws(HTTPError) {
    var rest = Substring(text.trimmingSpaces)
    var isSecure = secureByDefault
    if let range = rest.firstRange(of: "://") {
      let scheme = rest[..<range.lowerBound].lowercased()
      guard scheme == "http" || scheme == "https" else {
        throw .invalidEndpoint(text, reason: "unknown scheme '\(scheme)'; use http://host:port, https://host:port or host:port")
      }
      isSecure = scheme == "https"
      rest = rest[range.upperBound...]
    }
    if rest.hasSuffix("/") { rest = rest.dropLast() }
    guard !rest.contains("/") else {
      throw .invalidEndpoint(text, reason: "an endpoint is host:port, without a path")
    }
    let hostPart: Substring
    let portPart: Substring?
    if rest.hasPrefix("[") {
      // IPv6 literal: [address] or [address]:port.
      guard let close = rest.firstIndex(of: "]") else {
        throw .invalidEndpoint(text, reason: "missing ']' after the IPv6 address")
      }
      hostPart = rest[rest.index(after: rest.startIndex)..<close]
      let after = rest[rest.index(after: close)...]
      if after.isEmpty {
        portPart = nil
      } else if after.hasPrefix(":") {
        portPart = after.dropFirst()
      } else {
        throw .invalidEndpoint(text, reason: "expected ':port' after ']'")
      }
    } else if let colon = rest.lastIndex(of: ":") {
      hostPart = rest[..<colon]
      portPart = rest[rest.index(after: colon)...]
      guard !hostPart.contains(":") else {
        throw .invalidEndpoint(text, reason: "an IPv6 address needs brackets: [address]:port")
      }
    } else {
      hostPart = rest
      portPart = nil
    }
    guard !hostPart.isEmpty, !hostPart.contains(where: { $0 == " " || $0 == "\t" }) else {
      throw .invalidEndpoint(text, reason: "the host is empty or has spaces")
    }
    let port: Int
    if let portPart {
      guard let number = Int(portPart), (1...65535).contains(number) else {
        throw .invalidEndpoint(text, reason: "the port '\(portPart)' is not a number from 1 to 65535")
      }
      port = number
    } else if let defaultPort {
      port = defaultPort
    } else {
      throw .invalidEndpoint(text, reason: "no port; write host:port")
    }
    self.init(host: String(hostPart), port: port, isSecure: isSecure)
  }
}

extension String {
  /// The string without leading and trailing spaces, tabs and line breaks.
  fileprivate var trimmingSpaces: Substring {
    let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
    guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else {
      return ""
    }
    return self[first...last]
  }
}
