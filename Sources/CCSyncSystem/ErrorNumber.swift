import Glibc

/// An `errno` value with a name, so that code above System can tell failures apart without
/// importing Glibc: `switch error.errorNumber { case .noSuchFileOrDirectory: ... }`.
///
/// Only the values callers distinguish are named; any other code still compares by
/// ``rawValue``. `Sendable`.
package struct ErrorNumber: RawRepresentable, Hashable, Sendable {
  /// The `errno` value.
  package var rawValue: Int32

  /// Wraps an `errno` value.
  package init(rawValue: Int32) {
    self.rawValue = rawValue
  }

  /// `ENOENT`: the file, or a directory on its path, does not exist.
  package static let noSuchFileOrDirectory = ErrorNumber(rawValue: ENOENT)
  /// `ENOTDIR`: a component of the path is not a directory.
  package static let notDirectory = ErrorNumber(rawValue: ENOTDIR)
  /// `EISDIR`: a directory where a file was needed.
  package static let isDirectory = ErrorNumber(rawValue: EISDIR)
  /// `ELOOP`: too many symbolic links, or `O_NOFOLLOW` met one.
  package static let tooManySymbolicLinkLevels = ErrorNumber(rawValue: ELOOP)
  /// `EEXIST`: the file already exists.
  package static let fileExists = ErrorNumber(rawValue: EEXIST)
  /// `EACCES`: the permission bits refuse the access.
  package static let permissionDenied = ErrorNumber(rawValue: EACCES)
  /// `EPERM`: the operation is not permitted to this process.
  package static let notPermitted = ErrorNumber(rawValue: EPERM)
  /// `EROFS`: the file system is mounted read-only.
  package static let readOnlyFileSystem = ErrorNumber(rawValue: EROFS)
  /// `ENOSPC`: the device is full.
  package static let noSpace = ErrorNumber(rawValue: ENOSPC)
  /// `EDQUOT`: the user's disk quota is used up.
  package static let diskQuotaExceeded = ErrorNumber(rawValue: EDQUOT)
  /// `EIO`: the device failed.
  package static let inputOutputError = ErrorNumber(rawValue: EIO)
  /// `EFBIG`: the file would grow beyond the largest size allowed.
  package static let fileTooLarge = ErrorNumber(rawValue: EFBIG)
  /// `EBADF`: the descriptor is not open, or not open for what was asked.
  package static let badFileDescriptor = ErrorNumber(rawValue: EBADF)
  /// `EPIPE`: a write to a pipe or socket whose reader went away.
  package static let brokenPipe = ErrorNumber(rawValue: EPIPE)
  /// `EDEADLK`: the call would wait for ever (a lock this thread holds already).
  package static let wouldDeadlock = ErrorNumber(rawValue: EDEADLK)
}

extension SystemError {
  /// ``code`` as an ``ErrorNumber``, for matching by name.
  package var errorNumber: ErrorNumber { ErrorNumber(rawValue: code) }
}
