import Foundation
import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

// Reading, writing and inspecting files in the tests' assertions.

/// Reads a file's JSON for assertions.
func fileJSON(_ path: String) throws -> JSONValue {
  try JSONValue(parsing: [UInt8](FileManager.default.contents(atPath: path) ?? Data()))
}

/// Creates or replaces the file at `path` with `text`.
func writeFile(_ path: String, _ text: String) {
  _ = FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
}

/// `stat(2)` of `path`, following symlinks.
func statusOf(_ path: String) throws -> stat {
  var status = stat()
  guard stat(path, &status) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
  return status
}

/// `lstat(2)` of `path`.
func linkStatusOf(_ path: String) throws -> stat {
  var status = stat()
  guard lstat(path, &status) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
  return status
}

/// The bytes of the file at `path`.
func contents(of path: String) throws -> [UInt8] {
  [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
}

/// Creates a symlink at `path` whose text is `destination` (kept relative when it is).
func symlink(_ path: String, to destination: String) throws {
  try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: destination)
}

/// Runs a Python 3 snippet with `arguments` as `sys.argv[1...]`.
func python(_ script: String, _ arguments: String...) throws -> ChildProcess.Outcome {
  guard ChildProcess.find("python3") != nil else { try Test.cancel("python3 is not installed") }
  return try ChildProcess.run("python3", ["-c", script] + arguments)
}

/// `data.json` holding `{}` in `directory`, with metadata no new file would get: mode 0640,
/// owner and group 65534. What a replace of it must keep.
func makeFileWithForeignMetadata(in directory: TemporaryDirectory) throws -> String {
  let target = directory.file("data.json")
  try Data("{}".utf8).write(to: URL(fileURLWithPath: target))
  #expect(chmod(target, 0o640) == 0)
  #expect(chown(target, 65534, 65534) == 0)
  return target
}
