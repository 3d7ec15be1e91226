import CCSync
import CCSyncProcesses

/// The exit statuses `ccsync` documents (docs/CLI.md), from sysexits where one fits and 1 for
/// "not found" and lock conflicts, as git config and flock(1) do.
enum ExitCode {
  static let success: Int32 = 0
  /// No value at PATH; the lock could not be taken in time; a stress run lost updates.
  static let failure: Int32 = 1
  /// `watch --timeout` ended before `--count` lines were printed.
  static let timedOut: Int32 = 2
  /// EX_USAGE: unknown option, missing operand, malformed PATH.
  static let usage: Int32 = 64
  /// EX_DATAERR: not valid JSON; a PATH through a scalar; not a regular file.
  static let dataError: Int32 = 65
  /// EX_NOINPUT: FILE (or its directory) does not exist; a dangling or looping symlink.
  static let noInput: Int32 = 66
  /// EX_UNAVAILABLE: no member of the etcd cluster answered within the deadline.
  static let unavailable: Int32 = 69
  /// EX_CANTCREAT: the temp file, the lock file or the file cannot be created; a write
  /// refused by a read-only file system (EROFS).
  static let cannotCreate: Int32 = 73
  /// EX_IOERR: ENOSPC, EDQUOT, EIO, EFBIG and any other failed system call.
  static let ioError: Int32 = 74
  /// EX_TEMPFAIL: `edit` found a field changed both in the edit and in the file.
  static let conflict: Int32 = 75
  /// EX_TEMPFAIL too: `lock` on an etcd key lost its lease while the command ran, so the
  /// command was stopped.
  static let lockLost: Int32 = 75
  /// EX_NOPERM: permission denied (EACCES, EPERM) on an existing file; etcd refused the
  /// credentials, or TLS refused (a certificate not accepted either way).
  static let permission: Int32 = 77
  /// A command that could not be run: not executable (126) or not found (127), as shells do.
  static let commandNotExecutable: Int32 = 126
  static let commandNotFound: Int32 = 127
}

/// A failure a command reports as `ccsync: MESSAGE` on standard error before exiting `code`.
struct CommandFailure: Error {
  var code: Int32
  var message: String

  init(_ code: Int32, _ message: String) {
    self.code = code
    self.message = message
  }

  /// Maps any error a command let through to its exit status and message.
  /// - Parameter file: the FILE operand, named in messages that would not otherwise name it.
  init(_ error: any Error, file: String?) {
    switch error {
    case let failure as CommandFailure:
      self = failure
    case let error as StorageError:
      self.init(storage: error, file: file)
    case let error as StoreError:
      self.init(store: error, file: file)
    case let error as JSONPathError:
      if case .malformed = error {
        self.init(ExitCode.usage, error.description)
      } else {
        self.init(ExitCode.dataError, error.description + (file.map { " in '\($0)'" } ?? ""))
      }
    case let error as JSONParseError:
      self.init(ExitCode.dataError, "not valid JSON: \(error)")
    case let error as SystemError:
      self.init(store: .system(error), file: file)
    default:
      self.init(ExitCode.ioError, "\(error)")
    }
  }

  private init(storage error: StorageError, file: String?) {
    switch error {
    case .store(let store):
      self.init(store: store, file: file)
    case .invalidJSON, .decodingFailed, .encodingFailed, .rejected, .invalidSchema:
      self.init(ExitCode.dataError, error.description)
    case .schemaUnavailable, .versionNotKept:
      self.init(ExitCode.noInput, error.description)
    case .missingFile:
      self.init(ExitCode.noInput, error.description)
    }
  }

  private init(store error: StoreError, file: String?) {
    switch error {
    case .system(let system):
      self.init(system: system, file: file)
    case .notDurable(_, let system):
      self.init(CommandFailure(system: system, file: file).code, error.description)
    case .lockUnavailable(let lockPath):
      self.init(ExitCode.failure, file.map { "'\($0)' is locked by another process (lock file '\(lockPath)')" } ?? error.description)
    case .notRegularFile, .documentTooLarge:
      self.init(ExitCode.dataError, error.description)
    case .danglingSymlink, .symlinkLoop:
      self.init(ExitCode.noInput, error.description)
    case .missingDirectory(let directory):
      self.init(ExitCode.noInput, file.map { "'\($0)': no such directory '\(directory)'" } ?? error.description)
    case .invalidLocation:
      self.init(ExitCode.usage, error.description)
    case .unreachable:
      self.init(ExitCode.unavailable, error.description)
    case .accessDenied:
      self.init(ExitCode.permission, error.description)
    case .tooLarge(let message):
      // etcd names its limit only for a request far over it (gRPC's own check).
      let limit = message.contains("accepts at most") ? "" : " (the cluster's limit, --max-request-bytes: 1.5 MiB unless set otherwise)"
      self.init(ExitCode.ioError, message + limit + "; nothing written")
    case .cluster:
      self.init(ExitCode.ioError, error.description)
    case .outcomeUnknown:
      self.init(ExitCode.conflict, error.description)
    }
  }

  private init(system error: SystemError, file: String?) {
    // Name FILE when the failing call was on another path (the lock or temp file).
    let named = file.map { file in error.path == file ? error.description : "'\(file)': \(error)" } ?? error.description
    switch error.errorNumber {
    case .noSuchFileOrDirectory, .notDirectory, .tooManySymbolicLinkLevels:
      self.init(ExitCode.noInput, named)
    case .isDirectory:
      self.init(ExitCode.dataError, named)
    case .noSpace, .diskQuotaExceeded, .inputOutputError, .fileTooLarge:
      self.init(ExitCode.ioError, named)
    case .readOnlyFileSystem:
      // sysexits keeps 77 for a higher-level permission and asks file-system problems to
      // use 73, "cannot create (user) output file": what a script that checks for "could
      // not write" tests.
      let written = file ?? error.path
      // The refused call, naming its own path when that is another (the lock or temp file).
      let call = error.path.map { $0 == written ? error.operation : "\(error.operation) '\($0)'" } ?? error.operation
      let subject = written.map { "cannot write '\($0)'" } ?? "cannot write"
      self.init(ExitCode.cannotCreate, "\(subject): read-only file system (\(call): errno \(error.code))")
    case .permissionDenied, .notPermitted:
      // Refused to create a file that is not there (the temp file, a new lock file or data
      // file): "cannot create". Refused access to an existing file: "permission denied".
      let creating = error.operation == "open" || error.operation == "create temporary file"
      if creating, let path = error.path, !FileTree.exists(path) {
        let reason = "cannot create '\(path)': \(error.reason) (errno \(error.code))"
        self.init(ExitCode.cannotCreate, file.map { "'\($0)': " + reason } ?? reason)
      } else {
        self.init(ExitCode.permission, named)
      }
    case .fileExists:
      self.init(ExitCode.cannotCreate, named)
    default:
      self.init(ExitCode.ioError, named)
    }
  }

  /// Writes `ccsync: MESSAGE` to standard error.
  func report() {
    StandardStreams.writeLine("ccsync: " + message, toStandardError: true)
  }
}
