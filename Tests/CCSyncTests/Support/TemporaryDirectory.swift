import Foundation

/// A fresh, empty directory for one test, removed with everything in it by ``remove()`` or,
/// failing that, when the value is released.
///
/// Tests take one through ``withTemporaryDirectory(_:)``, which removes it when the body
/// returns or throws:
///
/// ```swift
/// @Test func savesTheFile() throws {
///   try withTemporaryDirectory { directory in
///     let path = directory.file("settings.json")
///     ...
///   }
/// }
/// ```
///
/// A value that owns a directory for its own lifetime (`WatchScenario`, a child process's
/// output files) keeps a `TemporaryDirectory` and removes it in its `deinit`.
///
/// The path has symlinks resolved (`realpath`), so tests can compare it with paths the
/// library computes. `@unchecked Sendable`: `path` never changes; removal is idempotent.
final class TemporaryDirectory: @unchecked Sendable {
  let path: String

  /// Creates `$TMPDIR/ccsync-test-XXXXXX` (or under `/tmp`) with mode 0700.
  init() throws {
    let base = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
    var template = Array((base + "/ccsync-test-XXXXXX").utf8CString)
    guard let created = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
      throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
    }
    guard let resolved = realpath(created, nil) else {
      throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
    }
    path = String(cString: resolved)
    free(resolved)
  }

  deinit { remove() }

  /// `path/name`.
  func file(_ name: String) -> String { path + "/" + name }

  /// `path/name`, as `directory("name")`.
  func callAsFunction(_ name: String) -> String { file(name) }

  /// The names in the directory (not recursive, without `.` and `..`), sorted.
  func names() throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: path).sorted()
  }

  /// Removes the directory and everything in it. Idempotent.
  func remove() {
    // A test may leave a subdirectory read-only for a non-root child; give it back first.
    if let walker = FileManager.default.enumerator(atPath: path) {
      for case let name as String in walker {
        var status = stat()
        let full = path + "/" + name
        if lstat(full, &status) == 0 && status.st_mode & S_IFMT == S_IFDIR { chmod(full, 0o700) }
      }
    }
    try? FileManager.default.removeItem(atPath: path)
  }
}

/// Runs `body` with a fresh ``TemporaryDirectory`` and removes the directory, with everything
/// in it, when `body` returns or throws. The directory lives exactly as long as `body` runs,
/// so a test whose body is its whole code may hand the path to child processes and threads
/// that it waits for. Throws what creating the directory throws, then what `body` throws.
///
/// A body whose only `try`s are inside `#expect(...)` says `{ directory throws in`: Swift
/// does not count a `try` in a macro's argument when it infers whether a closure throws.
@discardableResult
func withTemporaryDirectory<Value>(_ body: (TemporaryDirectory) throws -> Value) throws -> Value {
  let directory = try TemporaryDirectory()
  defer { directory.remove() }
  return try body(directory)
}

/// ``withTemporaryDirectory(_:)`` for an `async` body, run on the caller's actor.
@discardableResult
func withTemporaryDirectory<Value>(
  isolation: isolated (any Actor)? = #isolation, _ body: (TemporaryDirectory) async throws -> Value
) async throws -> Value {
  let directory = try TemporaryDirectory()
  defer { directory.remove() }
  return try await body(directory)
}
