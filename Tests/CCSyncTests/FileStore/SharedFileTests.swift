import Foundation
import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

/// docs/ARCHITECTURE.md, "Writing": reads, atomic replace, metadata, symlinks and special files at the
/// SharedFile layer. Locks are in FileLockTests.
@Suite struct SharedFileTests {
  // MARK: Reading and replacing

  @Test func writeThenReadRoundTrips() throws {
    try withTemporaryDirectory { directory in
      let file = SharedFile(path: directory.file("data.json"))
      let bytes = Array(#"{"theme":"dark","size":13}"#.utf8) + [0, 255, 10]

      let written = try file.replaceContents(with: bytes)
      let snapshot = try #require(try file.read())

      #expect(snapshot.bytes == bytes)
      #expect(snapshot.identity == written)
      #expect(try contents(of: file.path) == bytes)
    }
  }

  @Test(arguments: [0, 1, 4096, 65537, 3_000_000])
  func everyByteIsWrittenAndRead(size: Int) throws {
    try withTemporaryDirectory { directory in
      let file = SharedFile(path: directory.file("data.json"))
      let bytes = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 8) }

      try file.replaceContents(with: bytes)

      #expect(try contents(of: file.path) == bytes)
      #expect(try file.read()?.bytes == bytes)
    }
  }

  @Test func readOfMissingFileGivesNil() throws {
    try withTemporaryDirectory { directory throws in
      #expect(try SharedFile(path: directory.file("missing.json")).read() == nil)
      #expect(try SharedFile(path: directory.file("no/such/dir/missing.json")).read() == nil)
      #expect(try SharedFile(path: directory.file("missing.json")).identity() == nil)
    }
  }

  @Test func replaceChangesTheInodeAndReportsTheIdentityStatSees() throws {
    try withTemporaryDirectory { directory in
      let file = SharedFile(path: directory.file("data.json"))

      let first = try file.replaceContents(with: Array("1".utf8))
      let second = try file.replaceContents(with: Array("2".utf8))

      #expect(first.inode != second.inode)
      let status = try statusOf(file.path)
      #expect(second.inode == UInt64(status.st_ino))
      #expect(second.device == UInt64(status.st_dev))
      #expect(second.size == 1)
      #expect(second.modificationTime == .init(seconds: Int64(status.st_mtim.tv_sec), nanoseconds: Int64(status.st_mtim.tv_nsec)))
      #expect(second.statusChangeTime == .init(seconds: Int64(status.st_ctim.tv_sec), nanoseconds: Int64(status.st_ctim.tv_nsec)))
      #expect(try file.identity() == second)
      #expect(try file.read()?.identity == second)
    }
  }

  @Test func replaceLeavesNoTemporaryFilesBehind() throws {
    try withTemporaryDirectory { directory in
      let file = SharedFile(path: directory.file("data.json"))
      for value in 0..<20 { try file.replaceContents(with: Array("\(value)".utf8)) }
      #expect(try directory.names() == ["data.json"])

      _ = try file.withLock { try file.replaceContents(with: Array("locked".utf8)) }
      #expect(try directory.names() == ["data.json", "data.json.lock"])
    }
  }

  @Test(arguments: [true, false])
  func newFileGetsTheUsualModeAndDurabilityIsOptional(durable: Bool) throws {
    try withTemporaryDirectory { directory in
      let file = SharedFile(path: directory.file("data.json"), durable: durable)
      try file.replaceContents(with: Array("{}".utf8))

      // The umask as a fresh shell (which inherits it) reports it.
      let umask = try ChildProcess.run("sh", ["-c", "umask"])
      let mask = try #require(UInt32(umask.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines), radix: 8))
      let status = try statusOf(file.path)
      #expect(UInt32(status.st_mode) & 0o7777 == 0o666 & ~mask)
      #expect(status.st_uid == geteuid())
    }
  }

  // MARK: Failed replaces leave the target alone

  @Test func replaceOfADirectoryFailsAndLeavesIt() throws {
    try withTemporaryDirectory { directory in
      let target = directory.file("data.json")
      try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: false)
      try Data("inside".utf8).write(to: URL(fileURLWithPath: target + "/keep"))

      let error = #expect(throws: StoreError.self) {
        try SharedFile(path: target).replaceContents(with: Array("new".utf8))
      }
      guard case .notRegularFile(_, .directory)? = error else {
        Issue.record("expected notRegularFile(directory), got \(String(describing: error))")
        return
      }
      #expect(try directory.names() == ["data.json"])
      #expect(try FileManager.default.contentsOfDirectory(atPath: target) == ["keep"])
    }
  }

  @Test func replaceInAMissingDirectoryFails() throws {
    try withTemporaryDirectory { directory throws in
      let error = #expect(throws: StoreError.self) {
        try SharedFile(path: directory.file("gone/data.json")).replaceContents(with: Array("new".utf8))
      }
      guard case .missingDirectory(let path)? = error else {
        Issue.record("expected missingDirectory, got \(String(describing: error))")
        return
      }
      #expect(path == directory.file("gone"))
      #expect(try directory.names() == [])
    }
  }

  /// An immutable target (which stops even root) is refused before any temp file is made,
  /// as a write in place would be: the target is byte-identical. (A rename that fails after
  /// the temp file was written and synced is in FaultIOErrorTests and FaultMetadataTests.)
  @Test func immutableTargetIsRefusedAndKept() throws {
    try withTemporaryDirectory { directory in
      let target = directory.file("data.json")
      let original = Array(#"{"keep":true}"#.utf8)
      try Data(original).write(to: URL(fileURLWithPath: target))
      let before = try statusOf(target)
      guard ChildProcess.find("chattr") != nil, try ChildProcess.run("chattr", ["+i", target]).succeeded else {
        try Test.cancel("chattr +i is not available here (needs CAP_LINUX_IMMUTABLE)")
      }
      defer { _ = try? ChildProcess.run("chattr", ["-i", target]) }

      let error = #expect(throws: StoreError.self) {
        try SharedFile(path: target).replaceContents(with: Array("new".utf8))
      }
      guard case .system(let systemError)? = error else {
        Issue.record("expected a system error, got \(String(describing: error))")
        return
      }
      #expect(systemError.operation == "write")
      #expect(systemError.code == EPERM)
      #expect(systemError.path == target)
      #expect(try directory.names() == ["data.json"])
      #expect(try contents(of: target) == original)
      #expect(try statusOf(target).st_ino == before.st_ino)
    }
  }

  // MARK: Metadata survives a replace

  @Test func modeOwnerAndGroupSurviveAReplace() throws {
    try withTemporaryDirectory { directory in
      let target = try makeFileWithForeignMetadata(in: directory)

      let before = try statusOf(target)
      try SharedFile(path: target).replaceContents(with: Array(#"{"a":1}"#.utf8))
      let after = try statusOf(target)

      #expect(after.st_ino != before.st_ino)
      #expect(after.st_mode & 0o7777 == 0o640)
      #expect(after.st_uid == 65534)
      #expect(after.st_gid == 65534)
    }
  }

  @Test func userExtendedAttributeSurvivesAReplace() throws {
    try withTemporaryDirectory { directory in
      let target = directory.file("data.json")
      try Data("{}".utf8).write(to: URL(fileURLWithPath: target))
      let set = try python("import os, sys; os.setxattr(sys.argv[1], 'user.ccsync.note', b'kept \\x00 bytes')", target)
      guard set.succeeded else { try Test.cancel("user xattrs unsupported here: \(set.standardError)") }

      try SharedFile(path: target).replaceContents(with: Array(#"{"a":1}"#.utf8))

      let get = try python("import os, sys; print(os.getxattr(sys.argv[1], 'user.ccsync.note').hex())", target)
      #expect(get.standardOutput == Array("kept \0 bytes".utf8).map { String(format: "%02x", $0) }.joined() + "\n")
    }
  }

  /// The ACL is set as its raw `system.posix_acl_access` value (setfacl is often missing):
  /// `u::rw-, u:65534:r--, g::r--, m::r--, o::---`.
  @Test func posixAccessControlListSurvivesAReplace() throws {
    try withTemporaryDirectory { directory in
      let target = directory.file("data.json")
      try Data("{}".utf8).write(to: URL(fileURLWithPath: target))
      #expect(chmod(target, 0o640) == 0)
      let script = """
        import os, struct, sys
        entries = [(0x01, 6, 0xffffffff), (0x02, 4, 65534), (0x04, 4, 0xffffffff), (0x10, 4, 0xffffffff), (0x20, 0, 0xffffffff)]
        value = struct.pack('<I', 2) + b''.join(struct.pack('<HHI', *entry) for entry in entries)
        os.setxattr(sys.argv[1], 'system.posix_acl_access', value)
        """
      let set = try python(script, target)
      guard set.succeeded else { try Test.cancel("POSIX ACLs unsupported here: \(set.standardError)") }
      let read = "import os, sys; print(os.getxattr(sys.argv[1], 'system.posix_acl_access').hex())"
      let before = try python(read, target).standardOutput

      try SharedFile(path: target).replaceContents(with: Array(#"{"a":1}"#.utf8))

      let after = try python(read, target)
      #expect(after.succeeded, "no ACL after the replace: \(after.standardError)")
      #expect(after.standardOutput == before)
      #expect(try statusOf(target).st_mode & 0o7777 == 0o640)
      if ChildProcess.find("getfacl") != nil {
        let listing = try ChildProcess.run("getfacl", ["-cn", target])
        #expect(listing.standardOutput.contains("user:65534:r--"))
      }
    }
  }

  /// A set-group-id directory gives new files its group; the replaced file must still get
  /// the target's group, even when that is the writer's own group.
  @Test func groupSurvivesAReplaceInASetGroupIDDirectory() throws {
    try withTemporaryDirectory { directory in
      let shared = directory.file("shared")
      try FileManager.default.createDirectory(atPath: shared, withIntermediateDirectories: false)
      #expect(chown(shared, 0, 65534) == 0)
      #expect(chmod(shared, 0o2775) == 0)
      let target = shared + "/data.json"
      try Data("{}".utf8).write(to: URL(fileURLWithPath: target))
      #expect(chown(target, geteuid(), getegid()) == 0)
      #expect(chmod(target, 0o640) == 0)

      try SharedFile(path: target).replaceContents(with: Array(#"{"a":1}"#.utf8))

      let after = try statusOf(target)
      #expect(after.st_uid == geteuid())
      #expect(after.st_gid == getegid(), "took the directory's group")
      #expect(after.st_mode & 0o7777 == 0o640)
    }
  }

  // MARK: As an ordinary user (see asUser)

  /// The temp file cannot be created: the target stays byte-identical, nothing is left behind.
  @Test func replaceInAReadOnlyDirectoryFailsAndKeepsTheTarget() throws {
    try withTemporaryDirectory { directory in
      #expect(chmod(directory.path, 0o755) == 0)
      let readOnly = directory.file("read-only")
      try FileManager.default.createDirectory(atPath: readOnly, withIntermediateDirectories: false)
      let target = readOnly + "/data.json"
      let original = Array(#"{"keep":true}"#.utf8)
      try Data(original).write(to: URL(fileURLWithPath: target))
      #expect(chown(target, 65534, 65534) == 0)
      #expect(chmod(readOnly, 0o555) == 0)

      let result = try asUser {
        Result { () throws(StoreError) in try SharedFile(path: target).replaceContents(with: Array("new".utf8)) }
      }
      guard case .failure(.system(let error)) = result else {
        Issue.record("expected a system error, got \(result)")
        return
      }
      #expect(error.isPermissionDenied, "\(error)")
      #expect(try contents(of: target) == original)
      #expect(try FileManager.default.contentsOfDirectory(atPath: readOnly) == ["data.json"])
    }
  }

  /// A writer who may replace the file (the directory is theirs) but not give it away: the
  /// file becomes theirs, as with any editor that saves by rename, but keeps its group and
  /// mode, also when they cannot read it (mode 0620), where only `stat` can tell them.
  @Test(arguments: [0o664, 0o620] as [UInt32])
  func modeAndGroupSurviveAReplaceByAnotherUser(mode: UInt32) throws {
    try withTemporaryDirectory { directory in
      #expect(chmod(directory.path, 0o755) == 0)
      let shared = directory.file("shared")
      try FileManager.default.createDirectory(atPath: shared, withIntermediateDirectories: false)
      #expect(chown(shared, 65534, 65534) == 0)
      let target = shared + "/data.json"
      try Data("{}".utf8).write(to: URL(fileURLWithPath: target))
      #expect(chown(target, 0, 65534) == 0)
      #expect(chmod(target, mode_t(mode)) == 0)

      _ = try asUser { try SharedFile(path: target).replaceContents(with: Array(#"{"a":1}"#.utf8)) }

      let after = try statusOf(target)
      #expect(try contents(of: target) == Array(#"{"a":1}"#.utf8))
      #expect(after.st_uid == 65534)
      #expect(after.st_gid == 65534)
      #expect(UInt32(after.st_mode) & 0o7777 == mode, "mode \(String(after.st_mode & 0o7777, radix: 8))")
      #expect(try FileManager.default.contentsOfDirectory(atPath: shared) == ["data.json"])
    }
  }

  // MARK: Symlinks are written through

  enum LinkLayout: String, CaseIterable, Sendable {
    case absolute, relative, chainOfTwo, otherDirectory
  }

  @Test(arguments: LinkLayout.allCases)
  func symlinkedFileIsWrittenThroughAndStaysALink(layout: LinkLayout) throws {
    try withTemporaryDirectory { directory in
      try FileManager.default.createDirectory(atPath: directory.file("data"), withIntermediateDirectories: false)
      let target = directory.file("data/real.json")
      try Data("old".utf8).write(to: URL(fileURLWithPath: target))
      let link = directory.file("link.json")
      var links = [link]
      switch layout {
      case .absolute:
        try symlink(link, to: target)
      case .relative:
        try symlink(link, to: "data/real.json")
      case .chainOfTwo:
        try symlink(link, to: "middle.json")
        try symlink(directory.file("middle.json"), to: target)
        links.append(directory.file("middle.json"))
      case .otherDirectory:  // a Kubernetes ConfigMap's `..data/` layout, roughly
        try FileManager.default.createDirectory(atPath: directory.file("mounted"), withIntermediateDirectories: false)
        let nested = directory.file("mounted/link.json")
        try symlink(nested, to: "../data/real.json")
        links = [nested]
      }
      let linkTexts = try links.map { try FileManager.default.destinationOfSymbolicLink(atPath: $0) }
      let file = SharedFile(path: links[0])

      #expect(try file.resolvedPath().hasSuffix("/data/real.json"))
      _ = try file.withLock { try file.replaceContents(with: Array("new".utf8)) }

      for (link, text) in zip(links, linkTexts) {
        #expect(try linkStatusOf(link).st_mode & S_IFMT == S_IFLNK, "\(link) is no longer a link")
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link) == text)
      }
      #expect(try contents(of: target) == Array("new".utf8))
      #expect(try file.read()?.bytes == Array("new".utf8))
      // The lock sits beside the target, never beside a link; no temp file anywhere.
      #expect(try FileManager.default.contentsOfDirectory(atPath: directory.file("data")).sorted() == ["real.json", "real.json.lock"])
      for link in links { #expect(!FileManager.default.fileExists(atPath: link + ".lock")) }
      #expect(!(try directory.names().contains { $0.contains(".tmp-") }))
    }
  }

  @Test func danglingSymlinkIsReported() throws {
    try withTemporaryDirectory { directory in
      let link = directory.file("link.json")
      try symlink(link, to: "nowhere.json")
      let file = SharedFile(path: link)

      for operation in [{ _ = try file.read() }, { try file.replaceContents(with: [1]) }, { try file.withLock {} }] as [() throws -> Void] {
        let error = #expect(throws: StoreError.self) { try operation() }
        guard case .danglingSymlink(let path, let target)? = error else {
          Issue.record("expected danglingSymlink, got \(String(describing: error))")
          continue
        }
        #expect(path == link)
        #expect(target == directory.file("nowhere.json"))
      }
      #expect(try directory.names() == ["link.json"])
    }
  }

  @Test(arguments: [1, 2])
  func symlinkLoopIsReported(length: Int) throws {
    try withTemporaryDirectory { directory in
      let names = (0..<length).map { "loop\($0).json" }
      for (index, name) in names.enumerated() {
        try symlink(directory.file(name), to: names[(index + 1) % length])
      }
      let file = SharedFile(path: directory.file(names[0]))

      for operation in [{ _ = try file.read() }, { try file.replaceContents(with: [1]) }, { try file.withLock {} }] as [() throws -> Void] {
        let error = #expect(throws: StoreError.self) { try operation() }
        guard case .symlinkLoop? = error else {
          Issue.record("expected symlinkLoop, got \(String(describing: error))")
          continue
        }
      }
      #expect(try directory.names() == names.sorted())
    }
  }

  // MARK: Special files

  @Test func readOfADirectoryIsNotARegularFile() throws {
    try withTemporaryDirectory { directory in
      let error = #expect(throws: StoreError.self) { try SharedFile(path: directory.path).read() }
      guard case .notRegularFile(_, .directory)? = error else {
        Issue.record("expected notRegularFile(directory), got \(String(describing: error))")
        return
      }
    }
  }

  /// Opening a FIFO for reading blocks until a writer comes; a read must fail at once instead.
  @Test func fifoIsNotARegularFileAndNothingHangs() throws {
    try withTemporaryDirectory { directory throws in
      let fifo = directory.file("data.json")
      #expect(mkfifo(fifo, 0o600) == 0)
      let file = SharedFile(path: fifo)

      let reader = BackgroundThread { () throws -> Void in _ = try file.read() }
      let writer = BackgroundThread { () throws -> Void in try file.replaceContents(with: Array("x".utf8)) }
      let readResult = reader.result(deadline: .seconds(5))
      let writeResult = writer.result(deadline: .seconds(5))
      if readResult == nil || writeResult == nil {
        // Release the stuck thread by opening the other end, then fail.
        let descriptor = open(fifo, O_WRONLY | O_NONBLOCK)
        if descriptor >= 0 { close(descriptor) }
        Issue.record("an operation on a FIFO hung")
        return
      }
      for result in [readResult, writeResult] {
        guard case .failure(let error)? = result, case StoreError.notRegularFile(_, .fifo) = error else {
          Issue.record("expected notRegularFile(fifo), got \(String(describing: result))")
          continue
        }
      }
      #expect(try linkStatusOf(fifo).st_mode & S_IFMT == S_IFIFO)
      #expect(try directory.names() == ["data.json"])
    }
  }

  // MARK: Corrupt copies

  @Test func corruptCopyKeepsTheExactBytes() throws {
    try withTemporaryDirectory { directory in
      let file = SharedFile(path: directory.file("data.json"))
      let corrupt = Array("{\"unterminated\": [1, 2".utf8) + [0xFF, 0xFE, 0]
      try file.replaceContents(with: corrupt)
      #expect(chmod(file.path, 0o640) == 0)

      let first = try file.preserveCorruptCopy(of: corrupt)
      let second = try file.preserveCorruptCopy(of: Array("other".utf8))

      let name = String(first.split(separator: "/").last!)
      #expect(name.wholeMatch(of: /data\.json\.corrupt-\d{8}T\d{6}\.\d{3}Z(-\d+)?/) != nil, "\(name)")
      #expect(FilePath.directory(of: first) == directory.path)
      #expect(first != second)
      #expect(try contents(of: first) == corrupt)
      #expect(try contents(of: second) == Array("other".utf8))
      #expect(try contents(of: file.path) == corrupt)
      #expect(try statusOf(first).st_mode & 0o7777 == 0o640)
      #expect(try directory.names().count == 3)
    }
  }
}
