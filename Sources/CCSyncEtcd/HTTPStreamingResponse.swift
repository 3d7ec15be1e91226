import CCSyncJSON
import CCSyncSystem
import Glibc

/// A long-lived response read as it arrives, one newline-delimited message at a time: etcd's
/// watch stream, whose chunked body carries one JSON object per line for as long as the
/// watch lives.
///
/// Chunk boundaries need not match message boundaries (a large event spans chunks, a chunk
/// may hold several messages): lines are cut from the de-chunked bytes. The last message
/// may lack its newline (the gateway ends a stream with an error object written that way):
/// it is returned when the body ends. Owns its connection, which no other request uses.
///
/// Not `Sendable`: one thread reads it; ``interrupter`` is the handle other threads get.
/// Its reading state skips the run time's exclusivity checks, as ``HTTPConnection``'s
/// buffers do and for the same reasons.
package final class HTTPStreamingResponse {
  /// The status line and header fields.
  package let head: HTTPResponseHead
  /// The connection the body arrives on; nobody else uses it.
  private let connection: HTTPConnection
  /// Where the reading of the (chunked) body stands.
  @exclusivity(unchecked) private var reader: HTTPBodyReader
  /// Bytes of messages not yet returned; `pending[..<scanned]` holds no newline.
  @exclusivity(unchecked) private var pending: [UInt8] = []
  /// How much of ``pending`` is known to hold no newline, so it is not searched again.
  @exclusivity(unchecked) private var scanned = 0
  /// Whether the body has ended (the bytes left in ``pending`` are the last message).
  @exclusivity(unchecked) private var bodyEnded = false
  /// The longest message accepted.
  private let maximumMessageSize: Int

  /// Takes over `connection`, whose response head `head` has just been read.
  init(connection: HTTPConnection, head: HTTPResponseHead, maximumMessageSize: Int) {
    self.connection = connection
    self.head = head
    self.maximumMessageSize = maximumMessageSize
    reader = HTTPBodyReader(framing: head.framing)
  }

  deinit {
    connection.close()
  }

  /// The server, as errors name it.
  package var endpoint: String { connection.endpoint.description }

  /// The next message, without its newline; blank lines are skipped.
  /// - Returns: `nil` once the body has ended and every message was returned.
  /// - Throws: `HTTPError`: `noResponse` with `timedOut` when `deadline` passed first (the
  ///   stream stays usable: call again), `noResponse` when the connection ended or failed
  ///   before the body's end, `malformedResponse` for broken framing or a message over the
  ///   size limit.
  package func nextMessage(deadline: ContinuousClock.Instant) throws(HTTPError) -> [UInt8]? {
    while true {
      if let newline = firstNewline(from: scanned) {
        let line: [UInt8]
        if newline == pending.count - 1 {
          // The common case, a message that ends what was read: the buffer becomes the
          // message, uncopied.
          pending.removeLast()
          line = pending
          pending = []
        } else {
          line = Array(pending[..<newline])
          pending.removeSubrange(...newline)
        }
        scanned = 0
        if line.allSatisfy(HTTPStreamingResponse.isBlank) { continue }
        return line
      }
      scanned = pending.count
      if bodyEnded {
        // Flush a last message that has no newline.
        defer { pending = []; scanned = 0 }
        return pending.allSatisfy(HTTPStreamingResponse.isBlank) ? nil : pending
      }
      guard let piece = try connection.readBodyPiece(&reader, deadline: deadline) else {
        bodyEnded = true
        continue
      }
      if pending.isEmpty { pending = piece } else { pending += piece }
      guard pending.count <= maximumMessageSize else {
        connection.close()
        throw .malformedResponse(endpoint: endpoint, detail: "a message longer than \(maximumMessageSize) bytes")
      }
    }
  }

  /// The index of the first newline in ``pending`` at or after `start`, found by `memchr`: a
  /// watch event's line is a kilobyte or more of base64, which a byte-by-byte search of the
  /// array slice took five instructions a byte to cross.
  private func firstNewline(from start: Int) -> Int? {
    pending.withUnsafeBufferPointer { buffer in
      guard start < buffer.count, let base = buffer.baseAddress,
        let found = memchr(base + start, Int32(UInt8(ascii: "\n")), buffer.count - start)
      else { return nil }
      return base.distance(to: found.assumingMemoryBound(to: UInt8.self))
    }
  }

  /// Reads the rest of the body as one piece, for an error response (not `200`) that ends
  /// quickly: the gateway answers a refused stream with one JSON object.
  /// - Throws: like ``nextMessage(deadline:)``.
  package func readRemainingBody(deadline: ContinuousClock.Instant) throws(HTTPError) -> [UInt8] {
    var body = pending
    pending = []
    scanned = 0
    while let piece = try connection.readBodyPiece(&reader, deadline: deadline) {
      body += piece
      guard body.count <= maximumMessageSize else {
        throw .malformedResponse(endpoint: endpoint, detail: "a body longer than \(maximumMessageSize) bytes")
      }
    }
    bodyEnded = true
    return body
  }

  /// Trailer fields, once the body has ended.
  package var trailers: [HTTPHeader] { reader.trailers }

  /// A handle that makes a ``nextMessage(deadline:)`` blocked in another thread return at
  /// once (as the end of the connection). Safe to call from any thread, any number of
  /// times, also after the stream was closed.
  package var interrupter: @Sendable () -> Void {
    let stream = connection.stream
    return { stream.interrupt() }
  }

  /// Closes the connection; the server ends the stream on its side.
  package func close() {
    connection.close()
  }

  /// Whether `byte` is a space, tab, or line break.
  private static func isBlank(_ byte: UInt8) -> Bool {
    byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\r") || byte == UInt8(ascii: "\n")
  }
}
