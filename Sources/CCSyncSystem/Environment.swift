import Glibc

/// The process environment and user database, read without Foundation.
package enum Environment {
  /// The value of an environment variable, or `nil` when unset or empty.
  package static func value(_ name: String) -> String? {
    guard let raw = getenv(name) else { return nil }
    let text = String(cString: raw)
    return text.isEmpty ? nil : text
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
