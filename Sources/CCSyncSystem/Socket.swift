import Glibc

/// A connected TCP client socket with deadlines on every wait: for talking HTTP to a server
/// (etcd) that may be slow, stopped (`SIGSTOP`) or gone.
///
/// The descriptor is non-blocking (its reads block after ``makeReadsBlock()``, its sends
/// never) and close-on-exec, has `TCP_NODELAY` set (requests are small and written in one
/// piece; Nagle's algorithm would hold the next one back for the previous acknowledgement),
/// and is written with `MSG_NOSIGNAL`, so a peer that went away makes a write fail with
/// `EPIPE` instead of killing the process with `SIGPIPE`.
///
/// Errors are ``SystemError``s naming the operation (`connect`, `send`, `receive`) and the
/// endpoint as the caller gave it, e.g. `connect '127.0.0.1:2379': Connection refused
/// (errno 111)`. A deadline that passes gives `ETIMEDOUT` (``ErrorNumber/timedOut``).
///
/// `@unchecked Sendable`: one thread at a time sends and receives; ``interrupt()`` and
/// ``close()`` may be called from any thread (a lock keeps a concurrent close from letting
/// `interrupt()` shut down a reused descriptor number).
package final class TCPSocket: @unchecked Sendable {
  /// The endpoint as errors name it: `host:port`, `[v6]:port`.
  package let peer: String
  /// The socket's descriptor, open until ``close()`` (a ``TLSSocket`` reads and writes it).
  let descriptor: Int32
  /// Whether ``close()`` has run; read and set under the lock.
  private let isClosed = Protected(false)
  /// Whether nothing can be waiting to be read, so the next ``receive(into:deadline:)``
  /// waits (in `poll`, or in `recv` itself once reads block) before it reads: a request was
  /// just sent (its answer cannot be there yet), or the last receive emptied the socket's
  /// buffer (it read less than it had room for; on a stream the server writes to now and
  /// then, a watch, a read first would find nothing nearly every time). Either way the read
  /// that would end in `EAGAIN` is saved.
  /// Touched only by the one thread that sends and receives.
  private var pollsBeforeReading = false
  /// Whether the descriptor blocks in `recv` (``makeReadsBlock()``): a wait for an answer is
  /// then the `recv` itself, with `SO_RCVTIMEO` for the deadline, not a `poll` and a `recv`.
  /// Set once, before the first read.
  private var readsBlock = false
  /// The `SO_RCVTIMEO` set on the descriptor, in nanoseconds; zero while none is (the
  /// kernel's "for ever"). Whole numbers, not a `Duration`: this is compared on every read,
  /// and `Duration`'s division by an integer is generic code the compiler does not
  /// specialise, a tenth of a watch event's time in the stream's read (docs/BENCHMARK-METHOD.md,
  /// "Fan-out").
  private var receiveTimeoutNanoseconds: Int64 = 0

  /// Takes ownership of the open `descriptor`.
  private init(descriptor: Int32, peer: String) {
    self.descriptor = descriptor
    self.peer = peer
  }

  deinit {
    close()
  }

  /// Opens a connection to `host` (an IP literal or a name, see
  /// ``SocketAddress/resolve(host:port:)``) and `port`, trying each address the name
  /// resolves to in turn until one accepts or `deadline` passes.
  /// - Throws: `SystemError`: the resolver's error, `ETIMEDOUT` when the deadline passed,
  ///   otherwise the first address's error (`ECONNREFUSED`, `ENETUNREACH`...).
  /// The corresponding C functions are `getaddrinfo`, `socket`, `connect` and `poll`.
  package static func connect(host: String, port: Int, deadline: ContinuousClock.Instant) throws(SystemError) -> TCPSocket {
    let addresses = try SocketAddress.resolve(host: host, port: port)
    let peer = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    var firstError: SystemError?
    for address in addresses {
      do {
        return try connect(to: address, peer: peer, deadline: deadline)
      } catch {
        if firstError == nil { firstError = error }
        if error.code == ETIMEDOUT { throw error }
      }
    }
    throw firstError!
  }

  /// Opens a connection to `address`, waiting at most until `deadline` for the handshake.
  /// - Parameter peer: the endpoint as errors should name it; the numeric address when `nil`.
  /// - Throws: `SystemError` (`ECONNREFUSED`, `ETIMEDOUT`, `EMFILE`...).
  /// The corresponding C functions are `socket`, `setsockopt`, `connect`, `poll` and `getsockopt`.
  package static func connect(
    to address: SocketAddress, peer: String? = nil, deadline: ContinuousClock.Instant
  ) throws(SystemError) -> TCPSocket {
    let name = peer ?? address.description
    let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
    let descriptor = try systemCall("socket", path: name) { socket(address.family, type, 0) }
    // From here on the object owns the descriptor and closes it on every error path.
    let connection = TCPSocket(descriptor: descriptor, peer: name)
    var enabled: Int32 = 1
    _ = try systemCall("set TCP_NODELAY", path: name) {
      setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &enabled, socklen_t(MemoryLayout<Int32>.size))
    }
    if address.withSocketAddress({ Glibc.connect(descriptor, $0, $1) }) == -1 {
      let code = errno
      // A non-blocking connect goes on in the background; one interrupted by a signal too.
      guard code == EINPROGRESS || code == EINTR else {
        throw SystemError(code: code, operation: "connect", path: name)
      }
      try connection.wait(for: POLLOUT, until: deadline, operation: "connect")
      var result: Int32 = 0
      var length = socklen_t(MemoryLayout<Int32>.size)
      _ = try systemCall("connect", path: name) { getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &result, &length) }
      if result != 0 { throw SystemError(code: result, operation: "connect", path: name) }
    }
    return connection
  }

  /// Makes ``receive(into:deadline:)`` wait inside `recv` rather than in `poll`: one system
  /// call per answer awaited instead of two (on a watch stream, one per event). Sends and
  /// reads that must not wait stay non-blocking (`MSG_DONTWAIT`). For a socket read only by
  /// this type's calls: a TLS library reading the descriptor expects it non-blocking.
  /// The corresponding C function is `fcntl` with `F_SETFL`.
  package func makeReadsBlock() throws(SystemError) {
    _ = try systemCall("fcntl", path: peer) { fcntl(descriptor, F_SETFL, 0) }
    readsBlock = true
  }

  /// Sends every byte of `bytes`, waiting for room in the socket buffer as needed.
  /// - Throws: `SystemError` (`EPIPE` or `ECONNRESET` when the peer closed or reset the
  ///   connection, `ETIMEDOUT` when `deadline` passed first). Part of the bytes may have
  ///   been handed to the kernel, never all of them.
  /// The corresponding C function is `send` with `MSG_NOSIGNAL` and `MSG_DONTWAIT`.
  package func send(_ bytes: UnsafeRawBufferPointer, deadline: ContinuousClock.Instant) throws(SystemError) {
    guard let base = bytes.baseAddress else { return }
    pollsBeforeReading = true
    var offset = 0
    while offset < bytes.count {
      let sent = Glibc.send(descriptor, base + offset, bytes.count - offset, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
      if sent >= 0 {
        offset += sent
        continue
      }
      let code = errno
      if code == EINTR { continue }
      guard code == EAGAIN || code == EWOULDBLOCK else {
        throw SystemError(code: code, operation: "send", path: peer)
      }
      try wait(for: POLLOUT, until: deadline, operation: "send")
    }
  }

  /// Sends every byte of `bytes`; see ``send(_:deadline:)-(UnsafeRawBufferPointer,_)``.
  package func send(_ bytes: [UInt8], deadline: ContinuousClock.Instant) throws(SystemError) {
    try bytes.withUnsafeBytes { raw in
      Result { () throws(SystemError) in try send(raw, deadline: deadline) }
    }.get()
  }

  /// Reads what has arrived, up to `buffer.count` bytes, waiting until something arrives or
  /// `deadline` passes.
  /// - Returns: the number of bytes read; 0 when the peer closed its side (end of stream)
  ///   or ``interrupt()`` was called.
  /// - Throws: `SystemError` (`ECONNRESET`, `ETIMEDOUT`).
  /// The corresponding C function is `recv`.
  package func receive(into buffer: UnsafeMutableRawBufferPointer, deadline: ContinuousClock.Instant) throws(SystemError) -> Int {
    // A read that must wait (``pollsBeforeReading``, or after one that found nothing) waits
    // in `recv` for what is left until `deadline` when reads block (`SO_RCVTIMEO`), in `poll`
    // otherwise; any other read first takes what is there, without waiting.
    var waits = pollsBeforeReading
    while true {
      var flags = Int32(MSG_DONTWAIT)
      let remaining = waits ? deadline - .now : .zero
      if remaining > .zero {
        if readsBlock {
          try setReceiveTimeout(within: remaining.nanoseconds)
          flags = 0
        } else {
          try wait(for: POLLIN, until: deadline, operation: "receive")
        }
      }
      let count = recv(descriptor, buffer.baseAddress, buffer.count, flags)
      if count >= 0 {
        pollsBeforeReading = count > 0 && count < buffer.count
        return count
      }
      let code = errno
      if code == EINTR { continue }
      guard code == EAGAIN || code == EWOULDBLOCK else {
        throw SystemError(code: code, operation: "receive", path: peer)
      }
      // Nothing there yet (or SO_RCVTIMEO, set a little short of the deadline, expired).
      if waits && deadline <= .now { throw SystemError(code: ETIMEDOUT, operation: "receive", path: peer) }
      waits = true
    }
  }

  /// Sets `SO_RCVTIMEO` to `remaining` nanoseconds (more than zero), unless what is set
  /// already ends at most a millisecond later (as `poll`'s millisecond timeout may) and no
  /// more than a sixteenth of `remaining` earlier: a stream read with deadlines the same time
  /// ahead, or requests each with the same timeout, set it once. A timeout set short only
  /// costs a read that wakes, finds the deadline still ahead and waits again.
  /// The corresponding C function is `setsockopt` with `SO_RCVTIMEO`.
  private func setReceiveTimeout(within remaining: Int64) throws(SystemError) {
    let set = receiveTimeoutNanoseconds
    if set > 0, set - 1_000_000 <= remaining, set >= remaining - remaining / 16 { return }
    var value = Duration.nanoseconds(remaining).socketTimeout
    _ = try systemCall("set SO_RCVTIMEO", path: peer) {
      setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
    }
    receiveTimeoutNanoseconds = Int64(value.tv_sec) * 1_000_000_000 + Int64(value.tv_usec) * 1000  // at most `remaining`, or 1 µs
  }

  /// Whether the socket has something to read right now, without waiting: input, the
  /// peer's end of stream, a reset or an error. On an idle kept-alive connection any of
  /// those means the connection is not fit for another request (the server closed it, or
  /// sent something unasked).
  /// The corresponding C function is `poll` with a zero timeout.
  package var hasPendingInput: Bool {
    // A peer's end of stream makes the socket readable (POLLIN); a reset or error sets
    // POLLHUP or POLLERR, which poll reports whatever was asked.
    var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
    while true {
      let result = poll(&entry, 1, 0)
      if result >= 0 { return result > 0 }
      if errno != EINTR { return true }
    }
  }

  /// Makes a ``receive(into:deadline:)`` blocked in another thread return end of stream at
  /// once, and every later send fail: for cancelling a long-lived stream from outside.
  /// Safe from any thread; does nothing after ``close()``.
  /// The corresponding C function is `shutdown` with `SHUT_RDWR`.
  package func interrupt() {
    isClosed.withLock { closed in
      if !closed { _ = shutdown(descriptor, Int32(SHUT_RDWR)) }
    }
  }

  /// Closes the connection. A second call does nothing. The kernel sends what is left in
  /// the socket buffer, then the end of stream.
  /// The corresponding C function is `close`.
  package func close() {
    isClosed.withLock { closed in
      if !closed {
        closed = true
        _ = Glibc.close(descriptor)
      }
    }
  }

  /// Waits until the socket is ready for `events` (`POLLIN`, `POLLOUT`), or has an error or
  /// hang-up for the next call to report.
  /// - Throws: `SystemError` with `ETIMEDOUT` naming `operation` when `deadline` passes
  ///   first; `poll`'s own failure otherwise.
  func wait(for events: Int32, until deadline: ContinuousClock.Instant, operation: String) throws(SystemError) {
    while true {
      let remaining = deadline - .now
      if remaining <= .zero { throw SystemError(code: ETIMEDOUT, operation: operation, path: peer) }
      var entry = pollfd(fd: descriptor, events: Int16(events), revents: 0)
      let result = poll(&entry, 1, remaining.pollMilliseconds)
      if result > 0 { return }
      if result == -1 {
        let code = errno
        if code != EINTR { throw SystemError(code: code, operation: "poll", path: peer) }
      }
      // A timeout or a signal: the loop recomputes what is left of the deadline.
    }
  }
}
