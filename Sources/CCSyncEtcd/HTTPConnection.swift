import CCSyncJSON
import CCSyncSystem
import Glibc

/// One HTTP/1.1 connection to one endpoint, carrying one request at a time: writes a
/// request, reads the response head and body (fixed length, chunked with trailers, or until
/// close), and says whether it can carry another request.
///
/// Every failure makes it unusable (``isReusable`` false): after a timeout or a broken
/// response nobody knows where the next response would start. Not `Sendable`: one thread
/// uses it at a time (``HTTPClient`` hands it out).
///
/// The buffers skip the run time's exclusivity checks (`@exclusivity(unchecked)`): they are
/// private, touched only by this class's own methods, none of which calls back out while it
/// holds one, and checking them cost a watch event twenty calls into the run time and its
/// thread-local lookup (docs/BENCHMARK-METHOD.md, "Fan-out").
package final class HTTPConnection {
  /// The server it is connected to.
  package let endpoint: HTTPEndpoint
  /// The byte stream under it.
  let stream: any HTTPByteStream
  /// Bytes read and not yet consumed are `buffer[start...]`.
  @exclusivity(unchecked) private var buffer: [UInt8] = []
  /// Where the unconsumed bytes of ``buffer`` begin.
  @exclusivity(unchecked) private var start = 0
  /// Where reads land before they join ``buffer``: one allocation per connection, left
  /// uninitialised (only the bytes a read brought are ever used): zero-filling its 64 KiB
  /// was 16 of the page faults of a `ccsync get etcd://`, for replies of a few hundred bytes.
  @exclusivity(unchecked) private var scratch = [UInt8](unsafeUninitializedCapacity: 65536) { _, count in count = 65536 }
  /// Bytes received since the last request was sent: 0 means the server has not begun to
  /// answer it (the case a closed kept-alive connection produces).
  @exclusivity(unchecked) package private(set) var responseBytesReceived = 0
  /// Whether the connection can carry another request.
  package private(set) var isReusable = true
  /// How many responses were read in full on it: 0 for a fresh connection.
  package private(set) var completedExchanges = 0

  /// The longest line of a response head, chunk size or trailer accepted.
  static let maximumLineLength = 64 * 1024

  /// Wraps a connected stream to `endpoint`.
  package init(endpoint: HTTPEndpoint, stream: any HTTPByteStream) {
    self.endpoint = endpoint
    self.stream = stream
  }

  /// Closes the stream; the connection is unusable afterwards.
  package func close() {
    isReusable = false
    stream.close()
  }

  /// Writes `request`.
  /// - Throws: ``HTTPError/notDelivered(endpoint:reason:timedOut:)``: the stream failed
  ///   before taking the last byte (``HTTPByteStream``'s contract), so the server never has
  ///   the whole request.
  package func send(_ request: HTTPRequest, deadline: ContinuousClock.Instant) throws(HTTPError) {
    responseBytesReceived = 0
    do {
      try stream.write(request.serialized(host: endpoint.description), deadline: deadline)
    } catch {
      isReusable = false
      throw error.notDelivered(to: endpoint)
    }
  }

  /// Sends `request` and reads the whole response.
  /// - Parameter maximumBodySize: a longer body fails as ``HTTPError/malformedResponse(endpoint:detail:)``.
  /// - Throws: `HTTPError`: `notDelivered` from the write, `noResponse` or
  ///   `malformedResponse` from the read.
  package func exchange(
    _ request: HTTPRequest, deadline: ContinuousClock.Instant, maximumBodySize: Int
  ) throws(HTTPError) -> HTTPResponse {
    try send(request, deadline: deadline)
    let head = try readHead(deadline: deadline)
    var reader = HTTPBodyReader(framing: head.framing)
    var body: [UInt8] = []
    if case .length(let count) = head.framing {
      guard count <= maximumBodySize else { throw failure("a body of \(count) bytes, more than the \(maximumBodySize) allowed") }
      body.reserveCapacity(count)
    }
    while try appendBodyPiece(&reader, to: &body, deadline: deadline) {
      guard body.count <= maximumBodySize else { throw failure("a body of more than \(maximumBodySize) bytes") }
    }
    // Bytes beyond the response were not asked for: the stream is out of step.
    if !head.keepsConnection || start < buffer.count { isReusable = false }
    completedExchanges += 1
    return HTTPResponse(head: head, body: body, trailers: reader.trailers)
  }

  /// Reads a response's status line and header fields, skipping interim `1xx` responses;
  /// of the fields, only those that delimit the body or close the connection are kept
  /// (``HTTPFramingFields``).
  /// - Throws: `noResponse` when the stream ends or fails first, `malformedResponse` when
  ///   the head breaks HTTP/1.1.
  package func readHead(deadline: ContinuousClock.Instant) throws(HTTPError) -> HTTPResponseHead {
    while true {
      let statusLine = try readLine(deadline: deadline)
      guard let parsed = HTTPHeadSyntax.statusLine(statusLine) else {
        throw failure("status line '\(Self.text(statusLine))'")
      }
      var fields = HTTPFramingFields()
      while true {
        let line = try readLine(deadline: deadline)
        if line.isEmpty { break }
        guard fields.add(line) else { throw failure("header field '\(Self.text(line))'") }
      }
      // 101 would switch protocols, which this client never asks for; other 1xx are interim.
      if (100..<200).contains(parsed.status) && parsed.status != 101 { continue }
      guard let framing = fields.framing(status: parsed.status) else {
        throw failure("Content-Length '\(fields.contentLengthsText)'")
      }
      let keeps = parsed.isHTTP11 && !fields.closesConnection && framing != .untilClose
      return HTTPResponseHead(status: parsed.status, reason: parsed.reason, framing: framing, keepsConnection: keeps)
    }
  }

  /// The next piece of a body as it arrives (at most what one read brought), or `nil` at
  /// its end, after the trailer fields of a chunked body (kept in `reader`).
  ///
  /// A deadline passing leaves `reader` and the connection consistent: a later call goes on
  /// where this one stopped (watch streams wait with short deadlines in a loop).
  /// - Throws: `noResponse` when the stream ends early or fails, `malformedResponse` for a
  ///   bad chunk size.
  package func readBodyPiece(_ reader: inout HTTPBodyReader, deadline: ContinuousClock.Instant) throws(HTTPError) -> [UInt8]? {
    var piece: [UInt8] = []
    return try appendBodyPiece(&reader, to: &piece, deadline: deadline) ? piece : nil
  }

  /// ``readBodyPiece(_:deadline:)`` appended to `body`, straight from the connection's
  /// buffer; `false` at the body's end.
  func appendBodyPiece(_ reader: inout HTTPBodyReader, to body: inout [UInt8], deadline: ContinuousClock.Instant) throws(HTTPError) -> Bool {
    while true {
      switch reader.stage {
      case .finished:
        return false
      case .data(let remaining, let inChunk):
        if start == buffer.count { try fill(deadline: deadline) }
        let count = min(remaining, buffer.count - start)
        body += buffer[start..<start + count]
        start += count
        if count == remaining { reader.stage = inChunk ? .chunkEnd : .finished } else { reader.stage = .data(remaining: remaining - count, inChunk: inChunk) }
        return true
      case .chunkSize:
        let line = try readLine(deadline: deadline)
        // The size is hexadecimal, maybe followed by `;extension`, which no one needs.
        guard let size = HTTPHeadSyntax.chunkSize(line) else {
          throw failure("chunk size '\(Self.text(line, limit: 40))'")
        }
        reader.stage = size == 0 ? .trailers : .data(remaining: size, inChunk: true)
      case .chunkEnd:
        guard try readLine(deadline: deadline).isEmpty else { throw failure("chunk data longer than its size") }
        reader.stage = .chunkSize
      case .trailers:
        let line = try readLine(deadline: deadline)
        if line.isEmpty {
          reader.stage = .finished
        } else {
          reader.trailers.append(try parseField(line))
        }
      case .untilClose:
        if start == buffer.count, try !fillUnlessEnd(deadline: deadline) {
          reader.stage = .finished
          return false
        }
        body += buffer[start...]
        start = buffer.count
        return true
      }
    }
  }

  /// One line without its CR LF (a bare LF is accepted), as the bytes it is (heads are
  /// ASCII; see ``HTTPHeadSyntax``).
  private func readLine(deadline: ContinuousClock.Instant) throws(HTTPError) -> ArraySlice<UInt8> {
    var scanned = 0
    while true {
      if let newline = newlineIndex(from: start + scanned) {
        var end = newline
        if end > start && buffer[end - 1] == UInt8(ascii: "\r") { end -= 1 }
        let line = buffer[start..<end]
        start = newline + 1
        return line
      }
      scanned = buffer.count - start
      guard scanned <= HTTPConnection.maximumLineLength else {
        throw failure("a line longer than \(HTTPConnection.maximumLineLength) bytes")
      }
      try fill(deadline: deadline)
    }
  }

  /// The index of the first line feed in ``buffer`` at or after `offset`, found by `memchr`
  /// (a byte-at-a-time search of the slice cost as much as the rest of reading a head).
  private func newlineIndex(from offset: Int) -> Int? {
    buffer.withUnsafeBufferPointer { bytes in
      guard offset < bytes.count, let found = memchr(bytes.baseAddress! + offset, Int32(UInt8(ascii: "\n")), bytes.count - offset) else {
        return nil
      }
      return bytes.baseAddress!.distance(to: found.assumingMemoryBound(to: UInt8.self))
    }
  }

  /// The start of `line` as text for a message (invalid UTF-8 becomes U+FFFD).
  private static func text(_ line: ArraySlice<UInt8>, limit: Int = 80) -> String {
    String(decoding: line.prefix(limit), as: UTF8.self)
  }

  /// Reads more bytes into the buffer; the end of the stream is an error here.
  private func fill(deadline: ContinuousClock.Instant) throws(HTTPError) {
    if try !fillUnlessEnd(deadline: deadline) {
      isReusable = false
      let when = responseBytesReceived == 0 ? "before answering" : "in the middle of the response"
      throw .noResponse(endpoint: endpoint.description, reason: "the server closed the connection \(when)", timedOut: false)
    }
  }

  /// Reads more bytes into the buffer; `false` at the end of the stream.
  private func fillUnlessEnd(deadline: ContinuousClock.Instant) throws(HTTPError) -> Bool {
    // Drop consumed bytes once they are the bulk of the buffer, so it does not grow forever
    // on a long watch stream, without moving bytes on every read.
    if start == buffer.count {
      buffer.removeAll(keepingCapacity: true)
      start = 0
    } else if start > 65536 && start * 2 > buffer.count {
      buffer.removeSubrange(0..<start)
      start = 0
    }
    let stream = self.stream
    let result = scratch.withUnsafeMutableBytes { raw in
      Result { () throws(TransportError) in try stream.read(into: raw, deadline: deadline) }
    }
    let count: Int
    do {
      count = try result.get()
    } catch {
      // A deadline passing mid-wait leaves the bytes so far in place: only watch streams go
      // on after one, and they keep their place. Anything else breaks the connection.
      if !error.isTimeout { isReusable = false }
      // A TLS server that refused the client (TLS 1.3 tells it on the first read) did not
      // read the request.
      if error.isTLSRefusal { throw .tlsRefused(endpoint: endpoint.description, reason: error.description) }
      throw .noResponse(endpoint: endpoint.description, reason: error.description, timedOut: error.isTimeout)
    }
    if count == 0 { return false }
    buffer += scratch[0..<count]
    responseBytesReceived += count
    return true
  }

  /// Splits `name: value`.
  private func parseField(_ line: ArraySlice<UInt8>) throws(HTTPError) -> HTTPHeader {
    guard let field = HTTPHeadSyntax.field(line) else { throw failure("header field '\(Self.text(line))'") }
    return field
  }

  /// A ``HTTPError/malformedResponse(endpoint:detail:)`` about `what`; the connection is
  /// dropped.
  private func failure(_ what: String) -> HTTPError {
    isReusable = false
    return .malformedResponse(endpoint: endpoint.description, detail: what)
  }
}

/// Where the reading of one response body stands. `Sendable`.
package struct HTTPBodyReader: Sendable {
  /// The next thing to read.
  enum Stage: Sendable {
    /// `remaining` data bytes, of a chunk or of a fixed-length body.
    case data(remaining: Int, inChunk: Bool)
    /// A chunk-size line.
    case chunkSize
    /// The CR LF after a chunk's data.
    case chunkEnd
    /// Trailer fields up to a blank line.
    case trailers
    /// Bytes until the connection closes.
    case untilClose
    /// Nothing: the body is complete.
    case finished
  }

  /// What comes next.
  var stage: Stage
  /// The trailer fields read so far.
  package internal(set) var trailers: [HTTPHeader] = []

  /// Starts reading a body delimited by `framing`.
  package init(framing: HTTPBodyFraming) {
    switch framing {
    case .length(let count): stage = count == 0 ? .finished : .data(remaining: count, inChunk: false)
    case .chunked: stage = .chunkSize
    case .untilClose: stage = .untilClose
    }
  }

  /// Whether the whole body has been read.
  package var isFinished: Bool {
    if case .finished = stage { return true }
    return false
  }
}
