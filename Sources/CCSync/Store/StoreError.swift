import CCSyncSystem

/// What can go wrong reading, locking or writing a document's store (a file, an etcd key),
/// each naming the store. Upper layers wrap it in ``StorageError/store(_:)``. `Sendable`.
public enum StoreError: Error, Sendable, Equatable, CustomStringConvertible {
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
  /// The directory that should hold the file does not exist.
  case missingDirectory(path: String)
  /// The document is larger than a reader accepts (``SharedFile/maximumDocumentSize``,
  /// `CCSYNC_MAX_DOCUMENT_SIZE`): refused before it is read whole, so a huge file cannot make
  /// every process watching it parse it into memory.
  case documentTooLarge(path: String, size: Int64, limit: Int64)
  /// The new version is in place (readers see it) but a step after the rename failed (the
  /// directory's `fsync`), so whether it survives a crash is unknown. Unlike the other cases
  /// the write happened: a caller that retries must not apply a change again that is not
  /// idempotent (an increment).
  case notDurable(path: String, SystemError)
  /// A store's address that cannot be used (a malformed `etcd://` URL), with why.
  case invalidLocation(String, reason: String)
  /// No member of the cluster answered within the deadline; the message names each endpoint
  /// and why it failed.
  case unreachable(String)
  /// The cluster refused the credentials, or the user may not read or write the key; or no
  /// TLS connection could be set up (the member's certificate not accepted, this client's
  /// refused, the TLS files unusable), so nothing was sent.
  case accessDenied(String)
  /// The value is larger than the cluster accepts (`--max-request-bytes`); nothing written.
  case tooLarge(String)
  /// A write was sent but no answer came: it may or may not have happened, and was not
  /// repeated blindly. Read the document again to know.
  case outcomeUnknown(String)
  /// Another failure the cluster reported (an internal error, a malformed reply).
  case cluster(String)

  public var description: String {
    switch self {
    case .system(let error): return error.description
    case .lockUnavailable(let path): return "lock '\(path)': held by another process"
    case .notRegularFile(let path, let kind): return "'\(path)' is a \(kind.rawValue), not a regular file"
    case .danglingSymlink(let path, let target): return "'\(path)' is a symbolic link to '\(target)', which does not exist"
    case .symlinkLoop(let path): return "'\(path)': too many levels of symbolic links"
    case .missingDirectory(let path): return "'\(path)': no such directory"
    case .documentTooLarge(let path, let size, let limit):
      return "'\(path)' is \(size) bytes, more than the \(limit) a document may be (CCSYNC_MAX_DOCUMENT_SIZE); not read"
    case .notDurable(let path, let error):
      return "'\(path)' was replaced, but making it durable failed (a crash may still undo it); do not apply the same change again: \(error)"
    case .invalidLocation(let location, let reason): return "'\(location)': \(reason)"
    case .unreachable(let message), .accessDenied(let message), .tooLarge(let message), .outcomeUnknown(let message),
      .cluster(let message):
      return message
    }
  }
}

/// Runs `body`, turning a ``SystemError`` into ``StoreError/system(_:)``.
@inline(__always)
func withSystemErrors<Result>(_ body: () throws(SystemError) -> Result) throws(StoreError) -> Result {
  do {
    return try body()
  } catch {
    throw .system(error)
  }
}
