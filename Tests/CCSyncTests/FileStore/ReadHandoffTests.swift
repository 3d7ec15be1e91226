import Foundation
import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

/// A write under the lock inherits the metadata from the descriptor its read opened (see
/// `ReadHandoff`): the data file is opened once per locked read-modify-write, the metadata
/// still survives, and the read's descriptor is closed on every path.
@Suite struct ReadHandoffTests {
  /// The descriptors of this process open on files under `directory`, lock files excepted
  /// (as `/proc/self/fd` names them; a replaced file shows as `PATH (deleted)`). Tests run
  /// in parallel, each in its own directory, so another test's files never count here.
  static func openFiles(under directory: TemporaryDirectory) throws -> [String] {
    let links = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").compactMap {
      try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0)
    }
    return links.filter { $0.hasPrefix(directory.path + "/") && !$0.hasSuffix(".lock") }
  }

  @Test func lockedReadThenWriteKeepsModeOwnerGroupAndAttributes() throws {
    try withTemporaryDirectory { directory in
      let target = try makeFileWithForeignMetadata(in: directory)
      let set = try python("import os, sys; os.setxattr(sys.argv[1], 'user.ccsync.note', b'kept')", target)
      let file = SharedFile(path: target)

      try file.withLockedFile { locked in
        #expect(try locked.read()?.bytes == Array("{}".utf8))
        try locked.replaceContents(with: Array(#"{"a":1}"#.utf8))
      }

      let after = try statusOf(target)
      #expect(after.st_mode & 0o7777 == 0o640)
      #expect(after.st_uid == 65534 && after.st_gid == 65534)
      #expect(try contents(of: target) == Array(#"{"a":1}"#.utf8))
      guard set.succeeded else { try Test.cancel("user xattrs unsupported here: the attribute was not checked") }
      let get = try python("import os, sys; print(os.getxattr(sys.argv[1], 'user.ccsync.note'))", target)
      #expect(get.standardOutput == "b'kept'\n")
    }
  }

  /// One exact update opens the data file once (the lock file aside), as strace sees it.
  @Test func updateOpensTheDataFileOnce() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      try Data(#"{"counter": 1}"#.utf8).write(to: URL(fileURLWithPath: path))
      #expect(chmod(path, 0o640) == 0)

      let run = try runHelperTraced(["update-once", path], strace: ["-e", "trace=openat"], keepTrace: true)

      #expect(run.helper.standardOutput.contains("updated 2"), "\(run.helper.standardOutput) \(run.helper.standardError)")
      let opens = run.trace.split(separator: "\n").filter { $0.contains("openat(") && $0.contains("\"\(path)\"") }
      #expect(opens.count == 1, "\(opens)")
      #expect(try statusOf(path).st_mode & 0o7777 == 0o640)
    }
  }

  /// The read's descriptor stays open through the write that uses it and is closed once the
  /// lock is released (its last close frees the replaced file: not while others wait).
  @Test func readDescriptorLivesUntilTheLockIsReleased() throws {
    try withTemporaryDirectory { directory in
      let file = SharedFile(path: directory.file("data.json"))
      try file.replaceContents(with: Array("{}".utf8))

      try file.withLockedFile { locked in
        _ = try locked.read()
        #expect(try Self.openFiles(under: directory) == [file.path])
        try locked.replaceContents(with: Array("[]".utf8))
        #expect(try Self.openFiles(under: directory) == [file.path + " (deleted)"])
      }
      #expect(try Self.openFiles(under: directory) == [])
    }
  }

  /// A read with no write after it, a second read, a body that throws after its read, and a
  /// write that fails after the read: nothing stays open once the lock is released.
  @Test func readDescriptorIsClosedOnEveryPath() throws {
    struct Thrown: Error {}
    try withTemporaryDirectory { directory in
      let file = SharedFile(path: directory.file("data.json"))
      try file.replaceContents(with: Array("{}".utf8))

      try file.withLockedFile { locked in _ = try locked.read() }
      #expect(try Self.openFiles(under: directory) == [])

      try file.withLockedFile { locked in
        _ = try locked.read()
        _ = try locked.read()
        #expect(try Self.openFiles(under: directory) == [file.path], "the first read's descriptor is still open")
      }
      #expect(try Self.openFiles(under: directory) == [])

      #expect(throws: Thrown.self) {
        try file.withLockedFile { locked in
          _ = try locked.read()
          throw Thrown()
        }
      }
      #expect(try Self.openFiles(under: directory) == [])

      // The directory vanishes between the read and the write: the write fails, and the
      // descriptor of the (now deleted) file it would have inherited from is closed.
      let nested = directory.file("nested")
      try FileManager.default.createDirectory(atPath: nested, withIntermediateDirectories: false)
      let doomed = SharedFile(path: nested + "/data.json")
      try doomed.replaceContents(with: Array("{}".utf8))
      #expect(throws: StoreError.self) {
        try doomed.withLockedFile { locked in
          _ = try locked.read()
          try FileManager.default.removeItem(atPath: nested)
          try locked.replaceContents(with: Array("[]".utf8))
        }
      }
      #expect(try Self.openFiles(under: directory) == [])
    }
  }

  /// A kept version serves one write: a second write under the same lock, with no read in
  /// between, takes the metadata from the file as it is now, not from the first read.
  @Test func secondWriteUnderOneLockTakesTheMetadataAnew() throws {
    try withTemporaryDirectory { directory in
      let file = SharedFile(path: directory.file("data.json"))
      try file.replaceContents(with: Array("{}".utf8))
      #expect(chmod(file.path, 0o644) == 0)

      try file.withLockedFile { locked in
        _ = try locked.read()
        try locked.replaceContents(with: Array("[1]".utf8))
        #expect(chmod(file.path, 0o600) == 0)
        try locked.replaceContents(with: Array("[2]".utf8))
      }

      #expect(try statusOf(file.path).st_mode & 0o7777 == 0o600)
      #expect(try contents(of: file.path) == Array("[2]".utf8))
    }
  }

  /// An update of a missing file creates it (the write opens nothing to inherit from).
  @Test func updateOfAMissingFileCreatesIt() throws {
    try withTemporaryDirectory { directory in
      let document = SharedDocument(path: directory.file("data.json"))

      try document.update { $0 = ["created": true] }

      #expect(try SharedDocument(path: document.name).read() == ["created": true])
      #expect(try Self.openFiles(under: directory) == [])
    }
  }
}
