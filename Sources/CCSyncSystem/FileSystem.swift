import Glibc
import CCSyncSystemShims

/// Path-level system calls: rename, unlink, lstat, readlink, mkdir, directory sync.
/// Each retries on `EINTR` and throws a ``SystemError`` naming the path. Paths go to C through
/// `withCString`, which lends a native string's own bytes, where passing the `String` itself
/// would copy it into a new allocation on every call.
package enum FileSystem {
  /// Atomically replaces `destination` with `source`. The corresponding C function is `rename`.
  package static func rename(_ source: String, to destination: String) throws(SystemError) {
    _ = try systemCall("rename", path: source, secondPath: destination) {
      source.withCString { source in destination.withCString { Glibc.rename(source, $0) } }
    }
  }

  /// Makes `newPath` another name of the file at `existingPath` (no data is copied).
  /// The corresponding C function is `link`.
  package static func link(_ existingPath: String, as newPath: String) throws(SystemError) {
    _ = try systemCall("link", path: existingPath, secondPath: newPath) {
      existingPath.withCString { existing in newPath.withCString { Glibc.link(existing, $0) } }
    }
  }

  /// Removes an empty directory. The corresponding C function is `rmdir`.
  package static func removeEmptyDirectory(_ path: String) throws(SystemError) {
    _ = try systemCall("remove directory", path: path) { path.withCString { rmdir($0) } }
  }

  /// Removes a file. The corresponding C function is `unlink`.
  package static func removeFile(_ path: String) throws(SystemError) {
    _ = try systemCall("remove", path: path) { path.withCString { unlink($0) } }
  }

  /// The status of `path` itself (a symlink is not followed), or `nil` when nothing is there.
  /// The corresponding C function is `lstat`.
  package static func linkStatus(_ path: String) throws(SystemError) -> FileStatus? {
    try fileStatus(atPath: path, followingSymbolicLinks: false, operation: "stat").map(FileStatus.init)
  }

  /// The status of what `path` leads to (symlinks followed), or `nil` when nothing is there.
  package static func status(_ path: String) throws(SystemError) -> FileStatus? {
    try fileStatus(atPath: path, followingSymbolicLinks: true).map(FileStatus.init)
  }

  /// Refuses a path no file can have: empty (`ENOENT`, as `open("")` gives) or containing a
  /// NUL byte (`EINVAL`), which C would silently cut short, reaching another file.
  package static func checkPath(_ path: String) throws(SystemError) {
    if path.isEmpty { throw SystemError(code: ENOENT, operation: "open", path: path) }
    if path.utf8.contains(0) {
      let shown = String(decoding: path.utf8.flatMap { $0 == 0 ? Array(#"\0"#.utf8) : [$0] }, as: UTF8.self)
      throw SystemError(code: EINVAL, operation: "open (the path contains a NUL byte)", path: shown)
    }
  }

  /// Refuses (`EACCES`, as the kernel's `fs.protected_symlinks` does) to follow the symlink
  /// at `path`, owned by `owner`, when its directory is world-writable and sticky and the link
  /// belongs neither to this process's effective user nor to the directory's owner.
  package static func checkSymlinkMayBeFollowed(_ path: String, owner: UInt32) throws(SystemError) {
    guard owner != geteuid(), let directory = try status(FilePath.directory(of: path)) else { return }
    let worldWritableSticky = directory.permissions & UInt32(S_ISVTX) != 0 && directory.permissions & 0o002 != 0
    if worldWritableSticky && owner != directory.owner {
      throw SystemError(
        code: EACCES, operation: "follow another user's symbolic link in a world-writable sticky directory", path: path)
    }
  }

  /// The names in a directory, without `.` and `..`. The corresponding C functions are
  /// `opendir`, `readdir` and `closedir`.
  package static func directoryEntries(_ path: String) throws(SystemError) -> [String] {
    guard let stream = opendir(path) else {
      throw SystemError(code: errno, operation: "list directory", path: path)
    }
    defer { closedir(stream) }
    return names(in: stream)
  }

  /// The names an open directory stream lists, without `.` and `..`. The corresponding C
  /// function is `readdir`.
  package static func names(in stream: OpaquePointer) -> [String] {
    var names: [String] = []
    while let entry = readdir(stream) {
      let name = withUnsafePointer(to: &entry.pointee.d_name) { field in
        field.withMemoryRebound(to: CChar.self, capacity: MemoryLayout.size(ofValue: field.pointee)) { String(cString: $0) }
      }
      if name != "." && name != ".." { names.append(name) }
    }
    return names
  }

  /// Whether this process may write the file at `path` itself (mode bits, ACLs, the immutable
  /// flag, a read-only mount), checked with the effective (file system) user as `open` would.
  /// - Throws: the refusal (`EACCES`, `EPERM`, `EROFS`) as `operation` on `path`; other
  ///   errors (the file vanished) are not refusals and return normally.
  /// The corresponding C function is `faccessat` with `AT_EACCESS`.
  package static func checkWritable(_ path: String, operation: String, displayPath: String) throws(SystemError) {
    guard path.withCString({ faccessat(AT_FDCWD, $0, W_OK, AT_EACCESS) }) == -1 else { return }
    let code = errno
    if code == EACCES || code == EPERM || code == EROFS {
      throw SystemError(code: code, operation: operation, path: displayPath)
    }
  }

  /// Creates a directory. The corresponding C function is `mkdir`.
  package static func makeDirectory(_ path: String, mode: UInt32) throws(SystemError) {
    _ = try systemCall("create directory", path: path) { path.withCString { mkdir($0, mode_t(mode)) } }
  }

  /// Flushes a directory's entries (a completed rename) to the device.
  package static func synchronizeDirectory(_ path: String) throws(SystemError) {
    let directory = try OpenFile(path: path, options: .directory)
    try directory.synchronize()
    try directory.close()
  }

  /// Random letters and digits for temp file names.
  ///
  /// One 64-bit draw gives ten characters (62^10 < 2^64), from ``randomDraw()``. The slight
  /// bias of taking the draw modulo 62 does not matter for names that only need to differ.
  package static func randomSuffix(length: Int) -> String {
    let alphabet: StaticString = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    return String(unsafeUninitializedCapacity: length) { characters in
      var draw: UInt64 = 0
      for position in 0..<length {
        if position % 10 == 0 { draw = randomDraw() }
        characters[position] = alphabet.utf8Start[Int(draw % 62)]
        draw /= 62
      }
      return length
    }
  }

  /// 64 random bits from the kernel, drawn 16 at a time: a `getrandom` call per draw
  /// (`SystemRandomNumberGenerator`'s way) was one system call more in every locked save. A
  /// forked child goes on with its parent's draws; the names they make are created
  /// `O_EXCL`, so one drawn twice is only drawn again.
  private static func randomDraw() -> UInt64 {
    randomDraws.withLock { pool in
      if pool.next == pool.draws.count {
        let filled = pool.draws.withUnsafeMutableBytes { bytes in
          getrandom(bytes.baseAddress, bytes.count, 0) == bytes.count
        }
        if !filled {
          var generator = SystemRandomNumberGenerator()
          for index in pool.draws.indices { pool.draws[index] = generator.next() }
        }
        pool.next = 0
      }
      defer { pool.next += 1 }
      return pool.draws[pool.next]
    }
  }

  /// Draws fetched and not yet used; `next == draws.count` when all are used.
  private static let randomDraws = Protected<(draws: [UInt64], next: Int)>((Array(repeating: 0, count: 16), 16))

  /// The wall-clock time, comparable with file timestamps.
  package static func currentTime() -> FileIdentity.Timestamp {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return FileIdentity.Timestamp(now)
  }
}

extension FileSystem {
  /// `time` in UTC as ISO 8601 with milliseconds: `2026-11-29T21:05:24.123Z` (every etcd
  /// write's stamp and every history entry has one; see ``UTCTimestampText``).
  package static func isoTimestamp(_ time: FileIdentity.Timestamp) -> String {
    UTCTimestampText.text(seconds: time.seconds, fraction: Int(time.nanoseconds / 1_000_000), fractionDigits: 3)
  }

  /// Appends ``isoTimestamp(_:)``'s text to `text`, for a caller building bytes (a file
  /// history's log line) without a string in between.
  package static func appendISOTimestamp(_ time: FileIdentity.Timestamp, to text: inout [UInt8]) {
    UTCTimestampText.append(
      seconds: time.seconds, fraction: Int(time.nanoseconds / 1_000_000), fractionDigits: 3, to: &text)
  }

  /// The seconds since 1970 of a timestamp written by ``isoTimestamp(_:)``, or `nil`.
  package static func seconds(fromISOTimestamp text: String) -> Double? {
    let bytes = Array(text.utf8)
    guard bytes.count >= 20 else { return nil }
    func number(_ start: Int, _ count: Int) -> Int? {
      var value = 0
      for byte in bytes[start..<start + count] {
        guard byte >= 48 && byte <= 57 else { return nil }
        value = value * 10 + Int(byte - 48)
      }
      return value
    }
    guard let year = number(0, 4), let month = number(5, 2), let day = number(8, 2), let hour = number(11, 2),
      let minute = number(14, 2), let second = number(17, 2)
    else { return nil }
    let milliseconds = bytes.count >= 24 ? number(20, 3) ?? 0 : 0
    let days = Int(CivilDate.days(year: Int64(year), month: month, day: day))
    return Double(days * 86_400 + hour * 3600 + minute * 60 + second) + Double(milliseconds) / 1000
  }

  /// The current UTC time as `20261129T210524.123Z`, for file names.
  package static func utcTimestampForFileName() -> String {
    let now = currentTime()
    return UTCTimestampText.text(seconds: now.seconds, fraction: Int(now.nanoseconds / 1_000_000), fractionDigits: 3, style: .basic)
  }
}

