import CCSyncJSON
import CCSyncSystem

/// An error the gateway answered with: a gRPC status code and message. `Sendable`.
///
/// Measured shapes (etcd 3.4.23):
/// - a unary call's error is the body `{"error":"etcdserver: request is too large",
///   "message":"etcdserver: request is too large","code":3}`, chunked, with a
///   `Grpc-Trailer-Content-Type` trailer and an HTTP status that follows the code (400 for
///   InvalidArgument and OutOfRange, 401 Unauthenticated, 403 PermissionDenied, 404
///   NotFound, 429 ResourceExhausted, 500 Unknown, 503 Unavailable);
/// - inside a stream (watch, keep-alive) an error is one object
///   `{"error":{"grpc_code":14,"http_code":503,"message":"transport is closing",
///   "http_status":"Service Unavailable"}}`, the stream's last, without a newline;
/// - a `grpc-status`/`grpc-message` trailer pair, which 3.4 does not send but other gateway
///   versions do, is honoured too.
struct EtcdServerError: Sendable, Hashable {
  /// The gRPC status code.
  var code: Int
  /// The server's message, e.g. `etcdserver: requested lease not found`.
  var message: String

  /// The error in a reply object, or `nil` when it has no `error` member.
  init?(reply object: JSONObject) {
    switch object["error"] {
    case .string(let text)?:
      let message = object["message"]?.stringValue ?? text
      code = object["code"]?.numberValue?.int64Value.map { Int($0) } ?? 2
      self.message = message.isEmpty ? text : message
    case .object(let details)?:
      code = details["grpc_code"]?.numberValue?.int64Value.map { Int($0) } ?? 2
      message = details["message"]?.stringValue ?? details["http_status"]?.stringValue ?? "unknown error"
    default:
      return nil
    }
  }

  /// An error with the given code and message.
  init(code: Int, message: String) {
    self.code = code
    self.message = message
  }

  /// Whether the token sent was refused (expired, unknown to the member, or older than the
  /// member's auth store): the client authenticates again and repeats the call once. The
  /// member refused the request before acting on it, so writes are repeated too. A lock
  /// call reports it with code 2 (Unknown), hence the look at the message.
  var isInvalidToken: Bool {
    message.contains("invalid auth token") || message.contains("revision of auth store is old")
  }

  /// Whether the member refused a write before acting on it, so another member may be
  /// asked: it has no leader to propose to (or raft dropped the proposal for that reason),
  /// is overloaded, or the gateway could not reach its own gRPC server.
  var refusedBeforeProcessing: Bool {
    ["etcdserver: no leader", "etcdserver: not capable", "etcdserver: too many requests", "raft proposal dropped",
     "Error while dialing", "all SubConns are in TransientFailure"].contains { message.contains($0) }
  }

  /// Whether a write this member failed may still have been proposed to raft, and so may
  /// commit: the member was unavailable (code 14: "request timed out", "possibly due to
  /// previous leader failure", "server stopped"), out of time (4) or cancelled (1), and did
  /// not refuse it before processing.
  var mayHaveBeenProposed: Bool {
    (code == 14 || code == 4 || code == 1) && !refusedBeforeProcessing
  }

  /// Whether another member may answer a read this member failed: the member is
  /// unavailable (code 14: stopping, no leader, timed out waiting for one), out of time
  /// (4), overloaded, or refused before processing.
  var anotherMemberMayAnswer: Bool {
    code == 14 || code == 4 || code == 1 || refusedBeforeProcessing
  }

  /// The ``EtcdError`` for this error from `endpoint`; `lease` names the lease in
  /// ``EtcdError/leaseNotFound(endpoint:lease:)``.
  func error(endpoint: String, lease: Int64? = nil) -> EtcdError {
    if message.contains("user name is empty") {
      return .authenticationFailed(endpoint: endpoint, message: "\(message) (authentication is on; configure credentials)")
    }
    if code == 16 || isInvalidToken || message.contains("authentication failed") {
      return .authenticationFailed(endpoint: endpoint, message: message)
    }
    if code == 7 || message.contains("permission denied") {
      return .permissionDenied(endpoint: endpoint, message: message)
    }
    if message.contains("request is too large") {
      return .requestTooLarge(endpoint: endpoint, limit: nil, message: message)
    }
    if message.contains("larger than max") {
      // grpc: received message larger than max (600009 vs. 526336)
      let limit = message.split(separator: "vs.").last.flatMap { Int($0.filter(\.isNumber)) }
      return .requestTooLarge(endpoint: endpoint, limit: limit, message: message)
    }
    if message.contains("required revision has been compacted") {
      return .compacted(endpoint: endpoint, revision: nil)
    }
    if message.contains("requested lease not found") {
      return .leaseNotFound(endpoint: endpoint, lease: lease ?? 0)
    }
    return .server(endpoint: endpoint, code: code, message: message)
  }
}

/// What a gateway response means: the reply object, a server error, or garbage.
enum EtcdReply {
  /// The call succeeded with this object (a stream message's `result` unwrapped).
  case success(JSONObject)
  /// The server answered with an error.
  case failure(EtcdServerError)
  /// The response is not what the gateway sends.
  case malformed(String)

  /// Interprets a whole response.
  init(_ response: HTTPResponse) {
    if let code = EtcdReply.grpcStatus(of: response) {
      let message = response.trailers.value(named: "grpc-message").map(EtcdReply.percentDecoded) ?? "gRPC status \(code)"
      self = .failure(EtcdServerError(code: code, message: message))
      return
    }
    self.init(body: response.body, status: response.status)
  }

  /// Interprets one JSON message: a response body or one message of a stream.
  init(body: [UInt8], status: Int) {
    guard let value = try? JSONValue(parsing: body), case .object(let object) = value else {
      if status != 200 {
        // Not from the gateway's error handler: a plain-text 404 for an unknown path, say.
        let text = String(decoding: body.prefix(200), as: UTF8.self).trimmingWhitespace
        self = .failure(EtcdServerError(code: EtcdReply.grpcCode(httpStatus: status), message: "HTTP \(status): \(text)"))
      } else {
        self = .malformed("the body is not a JSON object: \(String(decoding: body.prefix(80), as: UTF8.self))")
      }
      return
    }
    if let error = EtcdServerError(reply: object) {
      self = .failure(error)
    } else if status != 200 {
      self = .failure(EtcdServerError(code: EtcdReply.grpcCode(httpStatus: status), message: "HTTP \(status)"))
    } else if case .object(let result)? = object["result"] {
      self = .success(result)
    } else {
      self = .success(object)
    }
  }

  /// The code of a `grpc-status` trailer that reports an error (not 0), or `nil`.
  static func grpcStatus(of response: HTTPResponse) -> Int? {
    guard let status = response.trailers.value(named: "grpc-status"), let code = Int(status), code != 0 else { return nil }
    return code
  }

  /// The gRPC code the gateway maps to `httpStatus` (the reverse of its table).
  static func grpcCode(httpStatus: Int) -> Int {
    switch httpStatus {
    case 400: 3
    case 401: 16
    case 403: 7
    case 404: 5
    case 409: 10
    case 429: 8
    case 501: 12
    case 503: 14
    case 504: 4
    default: 2
    }
  }

  /// `text` with `%XX` escapes decoded (gRPC percent-encodes `grpc-message`).
  static func percentDecoded(_ text: String) -> String {
    var bytes: [UInt8] = []
    var iterator = Array(text.utf8).makeIterator()
    while let byte = iterator.next() {
      if byte == UInt8(ascii: "%"), let high = iterator.next(), let low = iterator.next(),
        let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)
      {
        bytes.append(value)
      } else {
        bytes.append(byte)
      }
    }
    return String(decoding: bytes, as: UTF8.self)
  }
}

extension String {
  /// The string without leading and trailing whitespace and line breaks.
  fileprivate var trimmingWhitespace: String {
    guard let first = firstIndex(where: { !$0.isWhitespace }), let last = lastIndex(where: { !$0.isWhitespace }) else {
      return ""
    }
    return String(self[first...last])
  }
}
