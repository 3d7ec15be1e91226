import CCSyncSystem
import CCSyncJSON

/// Everything that can go wrong reading, locking or writing a shared file, each naming the file.
///
/// The CLI maps each case to a documented exit code; the library reports them to handlers and
/// throws them from `load()`, `save()`, `update {}` and `flush()`. `Sendable`.
public enum StorageError: Error, Sendable, CustomStringConvertible {
  /// A system call failed (the error names the call and the file).
  case system(SystemError)
  /// The lock could not be taken: held by another owner and not waiting (`nonBlocking`) or
  /// the wait ran out.
  case lockUnavailable(path: String)
  /// The path leads to something that is not a regular file (a directory, FIFO, device).
  case notRegularFile(path: String, kind: FileStatus.Kind)
  /// A symlink on the path leads nowhere.
  case danglingSymlink(path: String, target: String)
  /// Following the path's symlinks went round in a loop (or more than 40 links).
  case symlinkLoop(path: String)
  /// The file does not exist (reported where a file is required).
  case missingFile(path: String)
  /// The directory that should hold the file does not exist.
  case missingDirectory(path: String)
  /// The file's bytes are not valid JSON.
  case invalidJSON(path: String, JSONParseError)
  /// The file is valid JSON but does not decode as the value's type.
  case decodingFailed(path: String, message: String)
  /// The value could not be encoded as JSON (a non-finite float, a throwing `encode(to:)`).
  case encodingFailed(path: String, message: String)
  /// The new version is in place (readers see it) but a step after the rename failed (the
  /// directory's `fsync`), so whether it survives a crash is unknown. Unlike the other cases
  /// the write happened: a caller that retries must not apply a change again that is not
  /// idempotent (an increment).
  case notDurable(path: String, SystemError)

  public var description: String {
    switch self {
    case .system(let error): return error.description
    case .lockUnavailable(let path): return "lock '\(path)': held by another process"
    case .notRegularFile(let path, let kind): return "'\(path)' is a \(kind.rawValue), not a regular file"
    case .danglingSymlink(let path, let target): return "'\(path)' is a symbolic link to '\(target)', which does not exist"
    case .symlinkLoop(let path): return "'\(path)': too many levels of symbolic links"
    case .missingFile(let path): return "'\(path)': no such file"
    case .missingDirectory(let path): return "'\(path)': no such directory"
    case .invalidJSON(let path, let error): return "'\(path)' is not valid JSON: \(error)"
    case .decodingFailed(let path, let message): return "'\(path)' does not decode: \(message)"
    case .encodingFailed(let path, let message): return "cannot encode the value for '\(path)': \(message)"
    case .notDurable(let path, let error):
      return "'\(path)' was replaced, but making it durable failed (a crash may still undo it); do not apply the same change again: \(error)"
    }
  }
}

/// Runs `body`, turning a ``SystemError`` into ``StorageError/system(_:)``.
@inline(__always)
func withSystemErrors<Result>(_ body: () throws(SystemError) -> Result) throws(StorageError) -> Result {
  do {
    return try body()
  } catch {
    throw .system(error)
  }
}
