import CCSyncSystemShims
import Glibc

/// Why a TLS connection could not be set up or used. Its description names what failed, e.g.
/// `TLS handshake with '127.0.0.1:2379': certificate verify failed: unable to get local
/// issuer certificate`. `Sendable`.
package struct TLSError: Error, Sendable, Equatable, CustomStringConvertible {
  /// What kind of failure.
  package enum Kind: Sendable, Equatable {
    /// OpenSSL 3 (`libssl.so.3`) could not be loaded: no TLS on this machine.
    case unavailable
    /// The CA file, the client certificate or its key cannot be used.
    case settings
    /// The handshake failed: this side did not accept the server's certificate (its chain or
    /// its name), the server refused this side (a fatal alert: no client certificate, or one
    /// it does not trust), or the server does not speak TLS. No request reached the server.
    case refused
    /// The connection failed under TLS (reset, closed during the handshake, a broken record
    /// after it), or the deadline passed (`timedOut`).
    case connection(timedOut: Bool)
  }

  /// What kind of failure.
  package var kind: Kind
  package var description: String

  /// An error of `kind` saying `description`.
  package init(_ kind: Kind, _ description: String) {
    self.kind = kind
    self.description = description
  }

  /// A socket call's failure under TLS.
  package init(_ error: SystemError) {
    self.init(.connection(timedOut: error.code == ETIMEDOUT), error.description)
  }
}

/// The system's OpenSSL 3, loaded at run time with `dlopen` (docs/ARCHITECTURE.md, "TLS"):
/// building needs no OpenSSL headers, and a process that never opens a TLS connection never
/// loads it. `@unchecked Sendable`: immutable, and OpenSSL 3 is thread-safe.
package final class TLSLibrary: @unchecked Sendable {
  /// The sonames tried, in order: OpenSSL 3's, then the development symlink.
  package static let names = ["libssl.so.3", "libssl.so"]

  /// The library the process uses, loaded on first use, or why it cannot be.
  package static let shared = Result { () throws(TLSError) in try TLSLibrary(names: names) }

  /// The loaded library's function table.
  let pointer: OpaquePointer

  /// Loads the first of `names` that `dlopen` finds and that is OpenSSL 3 or later.
  /// - Throws: ``TLSError/Kind-swift.enum/unavailable`` naming each library tried and why.
  package init(names: [String]) throws(TLSError) {
    let copies = names.map { strdup($0) }
    defer { copies.forEach { free($0) } }
    let list = copies.map { UnsafePointer($0) } + [nil]
    guard let pointer = ccsync_tls_library_open(list) else {
      throw TLSError(.unavailable, "TLS unavailable: " + TLSLibrary.lastMessage)
    }
    self.pointer = pointer
  }

  /// The calling thread's last failure message from the C side.
  static var lastMessage: String { String(cString: ccsync_tls_last_message()) }
}

/// The settings of TLS client connections: which CA certificates to trust and which client
/// certificate to present. One context serves any number of connections, from any thread.
/// `@unchecked Sendable`: immutable after `init`; OpenSSL's `SSL_CTX` is thread-safe to share.
package final class TLSContext: @unchecked Sendable {
  /// The OpenSSL context.
  let pointer: OpaquePointer
  /// The library it came from, kept for as long as the context.
  let library: TLSLibrary

  /// Reads the CA certificates and the client certificate and key.
  /// - Parameters:
  ///   - caFile: the PEM certificates to verify servers against; the system's default
  ///     locations (`/etc/ssl/certs`) when `nil`.
  ///   - certificateFile: the client certificate (PEM, the chain after it), with `keyFile`
  ///     its unencrypted PEM key; both or neither.
  /// - Throws: ``TLSError/Kind-swift.enum/unavailable`` when OpenSSL cannot be loaded,
  ///   ``TLSError/Kind-swift.enum/settings`` naming the file that cannot be used and why.
  package init(caFile: String?, certificateFile: String?, keyFile: String?) throws(TLSError) {
    let library = try TLSLibrary.shared.get()
    var context: OpaquePointer?
    let status = withOptionalCString(caFile) { ca in
      withOptionalCString(certificateFile) { certificate in
        withOptionalCString(keyFile) { key in ccsync_tls_context_new(library.pointer, ca, certificate, key, &context) }
      }
    }
    guard status == Int32(CCSYNC_TLS_OK), let context else {
      throw TLSError(.settings, "TLS: " + TLSLibrary.lastMessage)
    }
    self.pointer = context
    self.library = library
  }

  deinit {
    ccsync_tls_context_free(pointer)
  }
}

/// A TLS client connection over a ``TCPSocket``, with the socket's deadlines on every wait:
/// the handshake, reads and writes drive OpenSSL on the non-blocking socket and `poll` it
/// for what OpenSSL asks for.
///
/// The server's certificate is verified against the context's CA certificates and must name
/// the host connected to (an IP address or a DNS name). A handshake that fails for that, or
/// because the server refused this client, is ``TLSError/Kind-swift.enum/refused`` and no
/// byte of a request was written. With TLS 1.3 a server judges the client's certificate after
/// the client's handshake is complete: its refusal (a fatal alert) arrives on the first read,
/// and is reported as `refused` too, since the server dropped the connection without reading
/// the request written meanwhile.
///
/// Writes go out with `MSG_NOSIGNAL` (no `SIGPIPE`). A write that fails has not handed the
/// last record to the kernel, so the peer cannot decrypt the last byte (each record is
/// authenticated whole).
///
/// `@unchecked Sendable`: one thread at a time reads and writes; ``interrupt()`` and
/// ``close()`` may be called from any thread (they act on the socket only).
package final class TLSSocket: @unchecked Sendable {
  /// The connection under TLS.
  private let socket: TCPSocket
  /// The OpenSSL session, freed with this object.
  private let session: OpaquePointer
  /// The settings, kept for as long as the session uses them.
  private let context: TLSContext
  /// Whether application data has arrived: before it, a fatal alert is the server refusing.
  private var hasReceivedData = false

  /// The endpoint as errors name it: `host:port`, `[v6]:port`.
  package var peer: String { socket.peer }

  private init(socket: TCPSocket, session: OpaquePointer, context: TLSContext) {
    self.socket = socket
    self.session = session
    self.context = context
  }

  deinit {
    ccsync_tls_session_free(session)
  }

  /// Connects to `host` and `port` (``TCPSocket/connect(host:port:deadline:)``) and runs the
  /// TLS handshake, verifying the server's certificate and its name `host`.
  /// - Throws: `TLSError`: `refused` (see the type's documentation), `connection` for the
  ///   TCP connection's failures, a deadline, or the server closing during the handshake.
  package static func connect(
    host: String, port: Int, context: TLSContext, deadline: ContinuousClock.Instant
  ) throws(TLSError) -> TLSSocket {
    let socket: TCPSocket
    do {
      socket = try TCPSocket.connect(host: host, port: port, deadline: deadline)
    } catch {
      throw TLSError(error)
    }
    var session: OpaquePointer?
    let status = ccsync_tls_session_new(context.pointer, socket.descriptor, host, &session)
    guard status == Int32(CCSYNC_TLS_OK), let session else {
      throw TLSError(.connection(timedOut: false), "TLS with '\(socket.peer)': " + TLSLibrary.lastMessage)
    }
    let connection = TLSSocket(socket: socket, session: session, context: context)
    let finished = try connection.drive("TLS handshake", deadline: deadline) { ccsync_tls_handshake(session) }
    if finished == Int32(CCSYNC_TLS_CLOSED) {
      throw TLSError(.connection(timedOut: false), "TLS handshake with '\(socket.peer)': the server closed the connection (does it serve TLS?)")
    }
    return connection
  }

  /// Writes every byte of `bytes`.
  /// - Throws: `TLSError`: `connection` (reset, closed, deadline passed), or `refused` when
  ///   the write failed because the server had refused the connection (TLS 1.3).
  package func send(_ bytes: [UInt8], deadline: ContinuousClock.Instant) throws(TLSError) {
    let session = self.session
    do {
      _ = try bytes.withUnsafeBytes { raw in
        Result { () throws(TLSError) in
          try drive("send", deadline: deadline) { ccsync_tls_write(session, raw.baseAddress, raw.count) }
        }
      }.get()
    } catch {
      // A server that refused the client certificate after a TLS 1.3 handshake closes, and
      // the write may meet the reset before a read meets its alert.
      if !hasReceivedData, error.kind != .refused, ccsync_tls_peer_refused(session) != 0 {
        throw refusal()
      }
      throw error
    }
  }

  /// Reads what has arrived, up to `buffer.count` bytes, waiting until something arrives or
  /// `deadline` passes.
  /// - Returns: the number of bytes read; 0 at the end of the stream (the server's
  ///   close_notify or its end of stream) or after ``interrupt()``.
  /// - Throws: `TLSError`: `connection`, or `refused` for a fatal alert before any data.
  package func receive(into buffer: UnsafeMutableRawBufferPointer, deadline: ContinuousClock.Instant) throws(TLSError) -> Int {
    let session = self.session
    var count = 0
    let status = try drive("receive", deadline: deadline) {
      ccsync_tls_read(session, buffer.baseAddress, buffer.count, &count)
    }
    if status == Int32(CCSYNC_TLS_CLOSED) { return 0 }
    hasReceivedData = true
    return count
  }

  /// Whether the connection has something to read right now, without waiting: data, the
  /// end of the stream or an error (an idle kept-alive connection is then unfit for another
  /// request). Records that carry no data (TLS 1.3 session tickets) are taken and do not count.
  package var hasPendingInput: Bool {
    let status = ccsync_tls_poll_input(session)
    return status != Int32(CCSYNC_TLS_WANT_READ) && status != Int32(CCSYNC_TLS_WANT_WRITE)
  }

  /// Makes a read blocked in another thread return end of stream (``TCPSocket/interrupt()``).
  package func interrupt() {
    socket.interrupt()
  }

  /// Closes the connection, without a close_notify (another thread may be reading). A
  /// second call does nothing.
  package func close() {
    socket.close()
  }

  /// Calls `step` until it is done, waiting on the socket for what it asks for.
  /// - Returns: `CCSYNC_TLS_OK` or `CCSYNC_TLS_CLOSED`.
  /// - Throws: the failure, named `operation`.
  private func drive(
    _ operation: String, deadline: ContinuousClock.Instant, _ step: () -> Int32
  ) throws(TLSError) -> Int32 {
    while true {
      let status = step()
      switch Int(status) {
      case CCSYNC_TLS_OK, CCSYNC_TLS_CLOSED:
        return status
      case CCSYNC_TLS_WANT_READ, CCSYNC_TLS_WANT_WRITE:
        let events = Int(status) == CCSYNC_TLS_WANT_READ ? POLLIN : POLLOUT
        do {
          try socket.wait(for: Int32(events), until: deadline, operation: operation)
        } catch {
          throw TLSError(error)
        }
      case CCSYNC_TLS_SYSTEM:
        let code = ccsync_tls_last_errno()
        // A server that does not speak TLS may reset the connection at the handshake instead
        // of closing it (etcd 3.5 serving plain HTTP does either): the same as a close.
        if code == ECONNRESET, operation == "TLS handshake" { return Int32(CCSYNC_TLS_CLOSED) }
        throw TLSError(SystemError(code: code, operation: operation, path: peer))
      case CCSYNC_TLS_VERIFY:
        throw TLSError(.refused, "TLS handshake with '\(peer)': " + TLSLibrary.lastMessage)
      case CCSYNC_TLS_ALERT where !hasReceivedData:
        throw refusal()
      case CCSYNC_TLS_PROTOCOL where operation == "TLS handshake":
        throw TLSError(.refused, "TLS handshake with '\(peer)': " + TLSLibrary.lastMessage)
      default:
        throw TLSError(.connection(timedOut: false), "\(operation) '\(peer)': TLS: " + TLSLibrary.lastMessage)
      }
    }
  }

  /// The server's fatal alert (the thread's last message) as a refusal.
  private func refusal() -> TLSError {
    TLSError(.refused, "TLS handshake with '\(peer)': the server refused this client: " + TLSLibrary.lastMessage)
  }
}

/// Calls `body` with `text` as a C string, or with `nil`.
private func withOptionalCString<Result>(_ text: String?, _ body: (UnsafePointer<CChar>?) -> Result) -> Result {
  guard let text else { return body(nil) }
  return text.withCString { body($0) }
}
