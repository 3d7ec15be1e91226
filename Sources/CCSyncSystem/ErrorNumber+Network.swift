import Glibc

extension ErrorNumber {
  /// `ETIMEDOUT`: a deadline passed (``TCPSocket`` uses it for its own deadlines too).
  package static let timedOut = ErrorNumber(rawValue: ETIMEDOUT)
  /// `ECONNREFUSED`: nothing listens on that port.
  package static let connectionRefused = ErrorNumber(rawValue: ECONNREFUSED)
  /// `ECONNRESET`: the peer reset the connection (it closed with unread input, or died).
  package static let connectionReset = ErrorNumber(rawValue: ECONNRESET)
  /// `EHOSTUNREACH`: no route to the host.
  package static let hostUnreachable = ErrorNumber(rawValue: EHOSTUNREACH)
  /// `ENETUNREACH`: no route to the network.
  package static let networkUnreachable = ErrorNumber(rawValue: ENETUNREACH)
  /// `ENXIO`: the name has no address (``SocketAddress/resolve(host:port:)``).
  package static let noSuchAddress = ErrorNumber(rawValue: ENXIO)
}
