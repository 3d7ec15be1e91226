import Foundation
import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

/// Metadata and links (issue 7, part 3): what a save keeps, and the documented outcome for
/// each kind of file a rename-replace cannot treat like any other (RELIABILITY.md, "Files
/// that are not plain"). SharedFileTests covers mode, owner, group, one xattr and one ACL
/// at a time and the symlink layouts; these tests combine them, go through the layers
/// above, and run as a real ordinary user where permissions matter.
@Suite(.serialized) struct FaultMetadataTests {
  /// Mode 0640, another group, a POSIX ACL and a user xattr, all on one file, all kept by
  /// two saves in a row through `SharedDocument` (the second save copies what the first kept).
  @Test func modeGroupAccessControlListAndExtendedAttributeAllSurviveSaves() throws {
    try FaultTools.requireRoot("chown to another group")
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      writeFile(path, #"{"a": 0}"#)
      #expect(chown(path, 0, 65534) == 0)
      #expect(chmod(path, 0o640) == 0)
      let script = """
        import os, struct, sys
        entries = [(0x01, 6, 0xffffffff), (0x02, 4, 65534), (0x04, 4, 0xffffffff), (0x10, 4, 0xffffffff), (0x20, 0, 0xffffffff)]
        os.setxattr(sys.argv[1], 'system.posix_acl_access', struct.pack('<I', 2) + b''.join(struct.pack('<HHI', *e) for e in entries))
        os.setxattr(sys.argv[1], 'user.ccsync.origin', b'deployed by hand')
        """
      let set = try python(script, path)
      guard set.succeeded else { try Test.cancel("ACLs or user xattrs unsupported here: \(set.standardError)") }
      let dump = """
        import os, sys
        for name in sorted(os.listxattr(sys.argv[1])): print(name, os.getxattr(sys.argv[1], name).hex())
        """
      let before = try python(dump, path).standardOutput
      #expect(before.contains("system.posix_acl_access") && before.contains("user.ccsync.origin"))
      let document = SharedDocument(path: path)

      for round in 1...2 {
        let inode = try statusOf(path).st_ino
        try document.update { $0 = ["a": .number(JSONNumber(round))] }
        let after = try statusOf(path)
        #expect(after.st_ino != inode, "round \(round): not replaced by rename")
        #expect(after.st_mode & 0o7777 == 0o640)
        #expect(after.st_uid == 0 && after.st_gid == 65534)
        #expect(try python(dump, path).standardOutput == before, "round \(round)")
      }
    }
  }

  /// A file a save creates gets what any new file gets in its directory: mode 0666 less the
  /// writer's umask, or the directory's default ACL where it has one (the kernel applies
  /// either). Compared with a file Python creates beside it with `open(..., "w")`. Before, the
  /// file was made 0600 and given 0666 less the umask afterwards, which overrode a default
  /// ACL: "other" got read access the ACL denied, and a named user's write was masked away.
  @Test(arguments: [false, true]) func aNewFileGetsTheDirectorysDefaultsLikeAnyNewFile(defaultACL: Bool) throws {
    try withTemporaryDirectory { directory in
      if defaultACL {
        // u::rw-, u:nobody:rw-, g::rw-, mask::rw-, o::---
        let script = """
          import os, struct, sys
          entries = [(0x01, 6, 0xffffffff), (0x02, 6, 65534), (0x04, 6, 0xffffffff), (0x10, 6, 0xffffffff), (0x20, 0, 0xffffffff)]
          os.setxattr(sys.argv[1], 'system.posix_acl_default', struct.pack('<I', 2) + b''.join(struct.pack('<HHI', *e) for e in entries))
          """
        let set = try python(script, directory.path)
        guard set.succeeded else { try Test.cancel("default ACLs unsupported here: \(set.standardError)") }
      }
      let describe = """
        import os, stat, sys
        for path in sys.argv[1:]:
            names = sorted(os.listxattr(path))
            acl = os.getxattr(path, 'system.posix_acl_access').hex() if 'system.posix_acl_access' in names else '-'
            print(oct(stat.S_IMODE(os.stat(path).st_mode)), acl)
        """
      let saved = directory.file("saved.json")
      let created = directory.file("created.json")
      let ccsync = try CLI.executable()
      let outcome = try ChildProcess.run(
        "/bin/sh", ["-c", "umask 027 && \"$0\" set \"$1\" a 1 && python3 -c 'open(\"'\"$2\"'\", \"w\")'", ccsync, saved, created])
      #expect(outcome.succeeded, "\(outcome.summary)")
      let lines = CLI.lines(try python(describe, saved, created).standardOutput)
      #expect(lines.count == 2 && lines[0] == lines[1], "saved, then created: \(lines)")
      #expect(lines.last?.hasPrefix(defaultACL ? "0o660" : "0o640") == true, "\(lines)")
    }
  }

  /// When a file's POSIX ACL cannot be copied to the new version, the save fails and the file
  /// is left as it was: the mode alone would widen access, since with an ACL the mode's group
  /// bits are the ACL's mask, which here lets in a named user while the owning group has no
  /// access. The ACL's `fsetxattr` fails by injection.
  @Test func anAccessControlListThatCannotBeCopiedFailsTheSave() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      let oldBytes = SharedDocument.documentBytes(["a": 0])
      try Data(oldBytes).write(to: URL(fileURLWithPath: path))
      #expect(chmod(path, 0o640) == 0)
      // user::rw-, user:65534:r--, group::---, mask::r--, other::---
      let script = """
        import os, struct, sys
        entries = [(0x01, 6, 0xffffffff), (0x02, 4, 65534), (0x04, 0, 0xffffffff), (0x10, 4, 0xffffffff), (0x20, 0, 0xffffffff)]
        os.setxattr(sys.argv[1], 'system.posix_acl_access', struct.pack('<I', 2) + b''.join(struct.pack('<HHI', *e) for e in entries))
        """
      let set = try python(script, path)
      guard set.succeeded else { try Test.cancel("ACLs unsupported here: \(set.standardError)") }
      let before = try statusOf(path)

      let run = try runHelperTraced(
        ["save-once", path, #"{"a":1}"#], strace: ["-e", "trace=fsetxattr", "-e", "inject=fsetxattr:error=ENOSPC:when=1"])

      #expect(run.helper.status == 1 && !run.helper.signaled, "\(run.helper.standardOutput) \(run.helper.standardError)")
      let message = try #require(run.failure)
      #expect(message.contains("system.posix_acl_access") && message.contains("(errno \(ENOSPC))"), "\(message)")
      #expect(try contents(of: path) == oldBytes)
      #expect(try statusOf(path).st_ino == before.st_ino)
      #expect(try directory.names() == ["settings.json", "settings.json.lock"])
    }
  }

  /// A symlink saved through by another process stays a link to the same place.
  @Test func symlinkStaysASymlinkWhenAnotherProcessSavesThroughIt() throws {
    try withTemporaryDirectory { directory in
      try FileManager.default.createDirectory(atPath: directory.file("real"), withIntermediateDirectories: false)
      writeFile(directory.file("real/settings.json"), #"{"counter": 1}"#)
      let link = directory.file("settings.json")
      try symlink(link, to: "real/settings.json")

      let run = try ChildProcess.run(testHelper(), ["update-once", link])

      #expect(run.standardOutput == "updated 2\n", "\(run.standardError)")
      #expect(try linkStatusOf(link).st_mode & S_IFMT == S_IFLNK)
      #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link) == "real/settings.json")
      #expect(try fileJSON(directory.file("real/settings.json")).objectValue?["counter"] == 2)
    }
  }

  /// Decision: a hard-linked file is still replaced by rename (never written in place, which
  /// a crash could tear). The saved name gets the new content, the other link keeps the old,
  /// and the logger warns once per file handle, at the first save that splits the link.
  @Test func hardLinkedFileIsReplacedAndTheSplitIsWarnedAboutOnce() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      let other = directory.file("other-name.json")
      writeFile(path, #"{"theme": "light"}"#)
      #expect(link(path, other) == 0)
      let warnings = Protected<[String]>([])
      let logger = DiagnosticLog { level, message in
        if level == .warning { warnings.withLock { $0.append(message) } }
      }
      struct Settings: Codable, Sendable { var theme = "light" }
      let storage = CodableStorage(
        defaultValue: Settings(), path: path, updateMode: .manual,
        options: StorageOptions(watchesForChanges: false, flushesAtExit: false, logger: logger))

      storage.wrappedValue.theme = "dark"
      try storage.save()
      // The link is split now; make it whole again and save twice more: still one warning.
      #expect(unlink(other) == 0 && link(path, other) == 0)
      storage.wrappedValue.theme = "blue"
      try storage.save()
      storage.wrappedValue.theme = "green"
      try storage.save()

      #expect(try fileJSON(path).objectValue?["theme"] == "green")
      #expect(try fileJSON(other).objectValue?["theme"] == "dark", "the other link keeps what it had when split")
      let messages = warnings.withLock { $0 }
      #expect(messages.count == 1, "\(messages)")
      #expect(messages.first == "'\(path)' has 2 hard links: a save replaces this name with a new file, so the other 1 keep the old content")
    }
  }

  /// Decision: a save needs write permission on the file, not only on its directory. A file
  /// made read-only (0444) by its owner is refused for an ordinary user, as a write in place
  /// would be, with the file unchanged; root, whom mode bits do not stop, replaces it and
  /// keeps 0444 (like `sed -i`).
  @Test func readOnlyFileIsRefusedForAnOrdinaryUserAndKeptReadOnlyByRoot() throws {
    try withTemporaryDirectory { directory in
      #expect(chmod(directory.path, 0o777) == 0)  // the directory would allow the rename
      let path = directory.file("settings.json")
      writeFile(path, #"{"counter": 1}"#)
      #expect(chmod(path, 0o444) == 0)
      if geteuid() == 0 { #expect(chown(path, 65534, 65534) == 0) }

      let run = try runHelperAsNobody(["update-once", path])

      #expect(run.standardOutput == "failed write '\(path)': Permission denied (errno 13)\n", "\(run.standardError)")
      #expect(try String(contentsOfFile: path, encoding: .utf8) == #"{"counter": 1}"#)
      #expect(try directory.names() == ["settings.json", "settings.json.lock"])

      let asRoot = try ChildProcess.run(testHelper(), ["update-once", path])
      #expect(asRoot.standardOutput == "updated 2\n", "\(asRoot.standardError)")
      let status = try statusOf(path)
      #expect(status.st_mode & 0o7777 == 0o444)
      #expect(status.st_uid == 65534)
    }
  }

  /// A writable file in a directory this user may not write: a clear permission error naming
  /// the temp file the save could not create, the file unchanged, nothing left behind.
  @Test func fileInANonWritableDirectoryGivesAPermissionErrorAndStaysUnchanged() throws {
    try withTemporaryDirectory { directory in
      #expect(chmod(directory.path, 0o755) == 0)
      let path = directory.file("settings.json")
      writeFile(path, #"{"counter": 1}"#)
      #expect(chmod(path, 0o666) == 0)
      writeFile(path + ".lock", "")
      #expect(chmod(path + ".lock", 0o666) == 0)

      let run = try runHelperAsNobody(["update-once", path])

      let message = run.standardOutput
      #expect(message.hasPrefix("failed create temporary file '\(directory.file(".settings.json.tmp-"))"), "\(message)")
      #expect(message.hasSuffix(": Permission denied (errno 13)\n"), "\(message)")
      #expect(try String(contentsOfFile: path, encoding: .utf8) == #"{"counter": 1}"#)
      #expect(try directory.names() == ["settings.json", "settings.json.lock"])
    }
  }

  /// Decision: a single-file bind mount (a container's config file) cannot be replaced by
  /// rename (`EBUSY`) and is never written in place: the save fails with an error naming the
  /// file, the file is unchanged and the temp file removed.
  @Test func singleFileBindMountGivesEBUSYAndStaysUnchanged() throws {
    try withTemporaryDirectory { directory in
      let source = directory.file("source.json")
      writeFile(source, #"{"counter": 1}"#)
      try FileManager.default.createDirectory(atPath: directory.file("app"), withIntermediateDirectories: false)
      let path = directory.file("app/settings.json")
      writeFile(path, "")
      try FaultTools.requireRoot("mount --bind")
      let mount = try ChildProcess.run(FaultTools.tool("mount"), ["--bind", source, path])
      guard mount.succeeded else { try Test.cancel("mount --bind is not permitted here: \(mount.standardError)") }
      defer { unmount(path) }

      let run = try ChildProcess.run(testHelper(), ["update-once", path])

      let message = run.standardOutput
      #expect(message.hasPrefix("failed rename '\(directory.file("app/.settings.json.tmp-"))"), "\(message)")
      #expect(message.hasSuffix("' to '\(path)': Device or resource busy (errno 16)\n"), "\(message)")
      #expect(try String(contentsOfFile: path, encoding: .utf8) == #"{"counter": 1}"#)
      #expect(try String(contentsOfFile: source, encoding: .utf8) == #"{"counter": 1}"#)
      #expect(try FileManager.default.contentsOfDirectory(atPath: directory.file("app")).sorted() == ["settings.json", "settings.json.lock"])
    }
  }
}

/// Runs the test helper as user and group 65534 with no supplementary groups (util-linux
/// `setpriv`), a real ordinary user rather than a thread with changed file-system ids.
func runHelperAsNobody(_ arguments: [String]) throws -> ChildProcess.Outcome {
  let outcome = try runAsNobody(testHelper(), arguments)
  if outcome.standardError.contains("Permission denied") {
    try Test.cancel("user 65534 cannot run the test helper here: \(outcome.standardError)")
  }
  return outcome
}
