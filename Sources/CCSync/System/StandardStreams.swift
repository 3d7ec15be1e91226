import Glibc

/// Unbuffered writes to standard output and standard error: one `write` per line, so lines
/// from several threads or processes never interleave mid-line.
public enum StandardStreams {
  /// Writes `text` and a newline in one `write` call (retrying short writes).
  public static func writeLine(_ text: String, toStandardError: Bool = false) {
    write(text + "\n", toStandardError: toStandardError)
  }

  /// Writes `text` as it is.
  public static func write(_ text: String, toStandardError: Bool = false) {
    var bytes = Array(text.utf8)
    writeBytes(&bytes, descriptor: toStandardError ? 2 : 1)
  }

  /// Writes raw bytes to standard output.
  public static func writeBytes(_ bytes: [UInt8], toStandardError: Bool = false) {
    var copy = bytes
    writeBytes(&copy, descriptor: toStandardError ? 2 : 1)
  }

  private static func writeBytes(_ bytes: inout [UInt8], descriptor: Int32) {
    bytes.withUnsafeBytes { buffer in
      var offset = 0
      while offset < buffer.count {
        let written = Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
        if written < 0 {
          if errno == EINTR { continue }
          return  // nowhere left to report a failing stderr
        }
        offset += written
      }
    }
  }
}
