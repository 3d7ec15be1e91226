import CCSyncJSON
import CCSyncSystem

/// One header field of a request, a response or a response's trailer. `Sendable`.
package struct HTTPHeader: Sendable, Hashable {
  /// The field name as sent (names compare without regard to case).
  package var name: String
  /// The value, without surrounding spaces.
  package var value: String

  /// A field `name: value`.
  package init(name: String, value: String) {
    self.name = name
    self.value = value
  }
}

extension HTTPHeader {
  /// Whether the field is called `name`, compared without regard to ASCII case.
  package func isNamed(_ name: String) -> Bool {
    HTTPHeadSyntax.equalIgnoringCase(self.name.utf8, name.utf8)
  }
}

extension [HTTPHeader] {
  /// The value of the first field called `name`, compared without regard to ASCII case.
  package func value(named name: String) -> String? {
    first { $0.isNamed(name) }?.value
  }
}

/// A request to send: method, path, extra header fields and a body. `Sendable`.
package struct HTTPRequest: Sendable {
  /// `POST`, `GET`...
  package var method: String
  /// The path and query, starting with `/`.
  package var path: String
  /// Fields besides `Host` and `Content-Length`, which the client writes itself.
  package var headers: [HTTPHeader]
  /// The body; empty for none (then `Content-Length: 0` is still sent for a `POST`).
  package var body: [UInt8]

  /// A request with the given parts.
  package init(method: String = "POST", path: String, headers: [HTTPHeader] = [], body: [UInt8] = []) {
    self.method = method
    self.path = path
    self.headers = headers
    self.body = body
  }

  /// The request as it goes on the wire: request line, fields, blank line, body, in one
  /// buffer so that it leaves in one write (and, with `TCP_NODELAY`, one packet when small).
  func serialized(host: String) -> [UInt8] {
    var bytes: [UInt8] = []
    bytes.reserveCapacity(256 + body.count)
    bytes += method.utf8
    bytes.append(HTTPHeadSyntax.space)
    bytes += path.utf8
    bytes.append(literal: " HTTP/1.1\r\nHost: ")
    bytes += host.utf8
    bytes.append(literal: "\r\n")
    for header in headers {
      bytes += header.name.utf8
      bytes.append(literal: ": ")
      bytes += header.value.utf8
      bytes.append(literal: "\r\n")
    }
    if !body.isEmpty || method == "POST" || method == "PUT" {
      bytes.append(literal: "Content-Length: ")
      bytes += String(body.count).utf8
      bytes.append(literal: "\r\n")
    }
    bytes.append(literal: "\r\n")
    bytes += body
    return bytes
  }
}

extension [UInt8] {
  /// Appends the UTF-8 of a literal, without going through `String`.
  mutating func append(literal: StaticString) {
    append(contentsOf: UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
  }
}

/// How the body of a response is delimited, from its head (RFC 9112 section 6.3).
package enum HTTPBodyFraming: Sendable, Hashable {
  /// Exactly this many bytes (`Content-Length`, or 0 for `204`, `304` and `HEAD`).
  case length(Int)
  /// `Transfer-Encoding: chunked`, ended by a zero-size chunk and optional trailer fields.
  case chunked
  /// Everything until the server closes the connection (neither of the above).
  case untilClose
}

/// What a response's head says: its status line, and how its body is delimited and whether
/// the connection stays open, from its header fields (``HTTPFramingFields``). `Sendable`.
package struct HTTPResponseHead: Sendable {
  /// The status code, e.g. 200.
  package var status: Int
  /// The reason phrase, e.g. `OK`.
  package var reason: String
  /// How the body is delimited.
  package var framing: HTTPBodyFraming
  /// Whether the connection may carry another request after this response: HTTP/1.1
  /// without `Connection: close`, and a body with a known end.
  package var keepsConnection: Bool
}

/// A whole response: head, body and, for a chunked body, the trailer fields. `Sendable`.
package struct HTTPResponse: Sendable {
  /// The status line and header fields.
  package var head: HTTPResponseHead
  /// The body bytes, de-chunked.
  package var body: [UInt8]
  /// The trailer fields after a chunked body (etcd's gateway sends `Grpc-Trailer-*` there).
  package var trailers: [HTTPHeader]

  /// The status code.
  package var status: Int { head.status }
}
