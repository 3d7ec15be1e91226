import CCSyncSystem
import Glibc

/// Tells the service manager (systemd, for a `Type=notify` unit) about this process, through
/// the datagram socket named in `$NOTIFY_SOCKET`: no library needed.
package enum ServiceNotification {
  /// Sends `READY=1`: the service has started and does what it is for. Does nothing when
  /// `$NOTIFY_SOCKET` is unset (not started by a service manager).
  /// - Throws: `SystemError` when the socket cannot be reached.
  package static func ready() throws(SystemError) {
    try send("READY=1")
  }

  /// Sends `STOPPING=1`: the service is shutting down.
  package static func stopping() throws(SystemError) {
    try send("STOPPING=1")
  }

  /// Sends `state` (`KEY=VALUE` lines) to `$NOTIFY_SOCKET`: a path, or an abstract socket
  /// name when it starts with `@`.
  /// The corresponding C functions are `socket` and `sendto`.
  static func send(_ state: String) throws(SystemError) {
    guard let socketName = Environment.value("NOTIFY_SOCKET") else { return }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    var path = Array(socketName.utf8)
    if path.first == UInt8(ascii: "@") { path[0] = 0 }  // the abstract namespace
    let capacity = MemoryLayout.size(ofValue: address.sun_path)
    guard path.count < capacity else { throw SystemError(code: ENAMETOOLONG, operation: "notify", path: socketName) }
    withUnsafeMutableBytes(of: &address.sun_path) { buffer in
      for (index, byte) in path.enumerated() { buffer[index] = byte }
    }
    let length = socklen_t(MemoryLayout<sa_family_t>.size + path.count)
    let descriptor = try systemCall("socket", path: socketName) { socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
    defer { close(descriptor) }
    let message = Array(state.utf8)
    _ = try systemCall("sendto", path: socketName) {
      withUnsafePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
          message.withUnsafeBytes { sendto(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL), socketAddress, length) }
        }
      }
    }
  }
}
