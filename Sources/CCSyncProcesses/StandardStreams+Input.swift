import CCSyncSystem
import Glibc

extension StandardStreams {
  /// Everything on standard input, read until end of file.
  /// - Throws: `SystemError` naming `standard input` (`EIO`, `EISDIR` when it is a directory).
  /// The corresponding C function is `read`.
  package static func readStandardInput() throws(SystemError) -> [UInt8] {
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
      let count = try systemCall("read", path: "standard input") {
        buffer.withUnsafeMutableBytes { Glibc.read(0, $0.baseAddress, $0.count) }
      }
      if count == 0 { return bytes }
      bytes.append(contentsOf: buffer[..<count])
    }
  }
}
