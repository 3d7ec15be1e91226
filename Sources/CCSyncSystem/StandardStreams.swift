import Glibc
import Synchronization

/// The exit status for a failed write to standard output; 0: none (the bytes are dropped).
private let outputFailureStatus = Atomic<Int32>(0)

/// Unbuffered writes to standard output and standard error: one `write` per line, so lines
/// from several threads or processes never interleave mid-line.
public enum StandardStreams {
  /// Makes a failed write to standard output (a full disk, a closed descriptor) end the
  /// process with `status` after one line on standard error naming the error, instead of
  /// dropping the bytes: a command-line tool must not report success with its output lost.
  /// (A reader that went away still ends the process by SIGPIPE, unless the process was
  /// started with SIGPIPE ignored: then the write fails with `EPIPE` and ends it with `status`.)
  public static func exitOnOutputFailure(status: Int32) {
    outputFailureStatus.store(status, ordering: .relaxed)
  }

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

  /// Writes `text` and a newline to standard output in one `write` call (retrying short
  /// writes), and leaves a failure to the caller instead of ending the process as
  /// ``exitOnOutputFailure(status:)`` arranges: for a command that must stop what it started
  /// before it ends (report the error with ``reportOutputFailure(_:)``).
  /// - Throws: `SystemError` with operation `write error on standard output`: `EPIPE` when
  ///   the reader went away (and SIGPIPE is caught or ignored), `ENOSPC`, `EIO`.
  /// The corresponding C function is `write`.
  public static func writeLineToOutput(_ text: String) throws(SystemError) {
    var bytes = Array((text + "\n").utf8)
    if let code = writeAll(&bytes, descriptor: 1) {
      throw SystemError(code: code, operation: "write error on standard output")
    }
  }

  /// Reports a failed write to standard output on standard error:
  /// `ccsync: write error on standard output: REASON (errno N)`.
  public static func reportOutputFailure(_ error: SystemError) {
    writeLine("ccsync: \(error)", toStandardError: true)
  }

  private static func writeBytes(_ bytes: inout [UInt8], descriptor: Int32) {
    // A failing standard error has nowhere left to be reported.
    guard let code = writeAll(&bytes, descriptor: descriptor), descriptor == 1 else { return }
    let status = outputFailureStatus.load(ordering: .relaxed)
    if status != 0 { failOutput(code: code, status: status) }
  }

  /// Writes every byte of `bytes`, retrying short and interrupted writes.
  /// - Returns: the `errno` of the write that failed; `nil` when every byte was written.
  private static func writeAll(_ bytes: inout [UInt8], descriptor: Int32) -> Int32? {
    bytes.withUnsafeBytes { buffer in
      var offset = 0
      while offset < buffer.count {
        let written = Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
        if written < 0 {
          if errno == EINTR { continue }
          return errno
        }
        offset += written
      }
      return nil
    }
  }

  private static func failOutput(code: Int32, status: Int32) -> Never {
    reportOutputFailure(SystemError(code: code, operation: "write error on standard output"))
    Glibc.exit(status)
  }
}
