import Glibc

/// An IPv4 or IPv6 address with a port, ready for `connect`: one of the answers name
/// resolution gives for a host. `Sendable`.
package struct SocketAddress: Sendable, Hashable, CustomStringConvertible {
  /// The raw `sockaddr_in` or `sockaddr_in6` bytes.
  let bytes: [UInt8]
  /// `AF_INET` or `AF_INET6`.
  let family: Int32
  /// The numeric form, as errors show it: `127.0.0.1:2379`, `[::1]:2379`.
  package let description: String

  /// The addresses a TCP connection to `host` and `port` can be opened to, in the order the
  /// resolver prefers (as `/etc/gai.conf` sorts them).
  ///
  /// `host` is an IPv4 literal (`127.0.0.1`), an IPv6 literal without brackets (`::1`) or a
  /// name (`localhost`, or any name the system's resolver knows: `/etc/hosts`, DNS).
  /// - Throws: `SystemError` with operation `resolve` and `host:port` as its path. Resolver
  ///   failures have no `errno`, so they are given the nearest one: `ENXIO` ("No such device
  ///   or address") when the name has no address, `EAGAIN` when the name server did not
  ///   answer, `EINVAL` for a malformed name or a port out of range.
  /// The corresponding C function is `getaddrinfo`.
  package static func resolve(host: String, port: Int) throws(SystemError) -> [SocketAddress] {
    let endpoint = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    guard (0...65535).contains(port), !host.isEmpty else {
      throw SystemError(code: EINVAL, operation: "resolve", path: endpoint)
    }
    var hints = addrinfo()
    hints.ai_family = AF_UNSPEC
    hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
    hints.ai_protocol = Int32(IPPROTO_TCP)
    // Numeric service: no /etc/services lookup. AI_ADDRCONFIG is left out on purpose: on a
    // host whose only interface is loopback it would refuse `::1` and `localhost`'s IPv6.
    hints.ai_flags = AI_NUMERICSERV
    var list: UnsafeMutablePointer<addrinfo>?
    let result = getaddrinfo(host, String(port), &hints, &list)
    guard result == 0, let first = list else {
      let code: Int32
      switch result {
      case EAI_SYSTEM: code = errno
      case EAI_AGAIN: code = EAGAIN
      case EAI_MEMORY: code = ENOMEM
      case EAI_NONAME, EAI_FAIL: code = ENXIO
      default: code = EINVAL
      }
      throw SystemError(code: code, operation: "resolve", path: endpoint)
    }
    defer { freeaddrinfo(list) }
    var addresses: [SocketAddress] = []
    var entry: UnsafeMutablePointer<addrinfo>? = first
    while let current = entry {
      let info = current.pointee
      if let address = info.ai_addr, info.ai_family == AF_INET || info.ai_family == AF_INET6 {
        let bytes = [UInt8](UnsafeRawBufferPointer(start: address, count: Int(info.ai_addrlen)))
        let candidate = SocketAddress(bytes: bytes, family: info.ai_family, description: numericText(address, port: port))
        // getaddrinfo repeats an address once per socket type it knows unless told the
        // type; the hints name one, but keep the list free of repeats all the same.
        if !addresses.contains(candidate) { addresses.append(candidate) }
      }
      entry = info.ai_next
    }
    if addresses.isEmpty { throw SystemError(code: ENXIO, operation: "resolve", path: endpoint) }
    return addresses
  }

  /// Runs `body` with the address as the `sockaddr` pointer and length `connect` takes.
  func withSocketAddress<Result>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> Result) -> Result {
    bytes.withUnsafeBytes { raw in
      body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count))
    }
  }

  /// `address` in numeric form with `port`: `127.0.0.1:2379` or `[::1]:2379`.
  private static func numericText(_ address: UnsafePointer<sockaddr>, port: Int) -> String {
    var text = [UInt8](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
    let family = Int32(address.pointee.sa_family)
    if family == AF_INET {
      address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { ipv4 in
        var raw = ipv4.pointee.sin_addr
        _ = inet_ntop(AF_INET, &raw, &text, socklen_t(text.count))
      }
      return "\(decodeNulTerminated(text)):\(port)"
    }
    address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { ipv6 in
      var raw = ipv6.pointee.sin6_addr
      _ = inet_ntop(AF_INET6, &raw, &text, socklen_t(text.count))
    }
    return "[\(decodeNulTerminated(text))]:\(port)"
  }

  /// The text in `bytes` up to its first NUL.
  private static func decodeNulTerminated(_ bytes: [UInt8]) -> String {
    String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
  }
}
