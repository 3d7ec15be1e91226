import Glibc

/// The process environment and user database, read without Foundation.
package enum Environment {
  /// The value of an environment variable, or `nil` when unset or empty.
  package static func value(_ name: String) -> String? {
    guard let raw = getenv(name) else { return nil }
    let text = String(cString: raw)
    return text.isEmpty ? nil : text
  }

  /// This machine's host name. The corresponding C function is `gethostname`.
  package static var hostName: String {
    var buffer = [CChar](repeating: 0, count: 256)
    guard gethostname(&buffer, buffer.count - 1) == 0 else { return "localhost" }
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  /// The effective user's name in the user database, or its number.
  package static var userName: String {
    if let entry = getpwuid(geteuid()), let name = entry.pointee.pw_name { return String(cString: name) }
    return String(geteuid())
  }

  /// Whether a process `pid` of this machine is running (a zombie counts).
  /// The corresponding C function is `kill` with signal 0.
  package static func processIsAlive(_ pid: Int32) -> Bool {
    pid > 0 && (kill(pid, 0) == 0 || errno == EPERM)
  }

  /// This process's id. The corresponding C function is `getpid`.
  package static var processID: Int32 { getpid() }

  /// The name this program runs as (`/proc/self/comm`, the kernel's), or `?`.
  package static var programName: String {
    guard let file = fopen("/proc/self/comm", "r") else { return "?" }
    defer { fclose(file) }
    var buffer = [CChar](repeating: 0, count: 64)
    guard fgets(&buffer, Int32(buffer.count), file) != nil else { return "?" }
    let name = String(decoding: buffer.prefix { $0 != 0 && $0 != 10 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    return name.isEmpty ? "?" : name
  }

  /// Sets an environment variable of this process (and of the children it starts).
  /// The corresponding C function is `setenv`.
  package static func set(_ name: String, to value: String) {
    setenv(name, value, 1)
  }

  /// `$HOME`, or the home directory in the user database.
  package static var homeDirectory: String {
    if let home = value("HOME") { return home }
    if let entry = getpwuid(geteuid()), let directory = entry.pointee.pw_dir {
      return String(cString: directory)
    }
    return "/"
  }
}
