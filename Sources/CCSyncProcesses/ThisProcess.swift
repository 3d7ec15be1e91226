import CCSyncSystem
import Glibc

/// Process-wide state and actions of the running program: its environment, working
/// directory and exit.
package enum ThisProcess {
  /// A path that starts this program again, for copies of itself (the kernel's link to the
  /// executable, valid even if the file was renamed).
  package static let executablePath = "/proc/self/exe"

  /// The value of an environment variable, or `nil` when it is unset or empty.
  /// The corresponding C function is `getenv`.
  package static func environmentValue(_ name: String) -> String? {
    Environment.value(name)
  }

  /// This process's id.
  /// The corresponding C function is `getpid`.
  package static var identifier: Int32 { getpid() }

  /// Whether standard error is a terminal (a live status line is drawn only there).
  /// The corresponding C function is `isatty`.
  package static var standardErrorIsTerminal: Bool { isatty(2) == 1 }

  /// `$TMPDIR`, or `/tmp` when it is unset or empty.
  package static var temporaryDirectory: String {
    environmentValue("TMPDIR") ?? "/tmp"
  }

  /// The path of the executable `name` in a directory of `$PATH` (as a shell finds it), or
  /// `nil` when no directory holds one this process may run.
  /// The corresponding C function is `access` with `X_OK`.
  package static func executablePath(named name: String) -> String? {
    let directories = (environmentValue("PATH") ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":")
    for directory in directories where !directory.isEmpty {
      let candidate = String(directory) + "/" + name
      if access(candidate, X_OK) == 0, !FileTree.isDirectory(candidate) { return candidate }
    }
    return nil
  }

  /// Makes `path` the working directory that relative paths start from, for every thread.
  /// - Throws: `SystemError` (`ENOENT`, `ENOTDIR`, `EACCES`).
  /// The corresponding C function is `chdir`.
  package static func changeDirectory(to path: String) throws(SystemError) {
    _ = try systemCall("change directory", path: path) { chdir(path) }
  }

  /// Ends the process with `status` (0 to 255) after the work registered to run at exit, the
  /// library's flush of pending changes included, and the flush of C's output buffers.
  /// The corresponding C function is `exit`.
  package static func exit(_ status: Int32) -> Never {
    Glibc.exit(status)
  }
}
