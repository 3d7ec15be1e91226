import Glibc

/// TCP ports for servers a process starts itself on loopback (the cluster demo's etcd
/// members).
package enum LoopbackPorts {
  /// `count` different TCP ports free on 127.0.0.1 now: each is bound to port 0 (the kernel
  /// picks), all at once so they differ, read back and released. Another process may take
  /// one before the caller binds it; callers that start servers on them check they started.
  /// - Throws: `SystemError` when a socket cannot be made or bound.
  /// The corresponding C functions are `socket`, `bind`, `getsockname` and `close`.
  package static func free(_ count: Int) throws(SystemError) -> [Int] {
    var descriptors: [Int32] = []
    defer { for descriptor in descriptors { close(descriptor) } }
    var ports: [Int] = []
    for _ in 0..<count {
      let descriptor = try systemCall("socket") { socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
      descriptors.append(descriptor)
      var address = sockaddr_in()
      address.sin_family = sa_family_t(AF_INET)
      address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
      address.sin_port = 0
      var length = socklen_t(MemoryLayout<sockaddr_in>.size)
      _ = try systemCall("bind", path: "127.0.0.1:0") {
        withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) } }
      }
      _ = try systemCall("getsockname") {
        withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) } }
      }
      ports.append(Int(UInt16(bigEndian: address.sin_port)))
    }
    return ports
  }
}
