import Foundation
import Testing

/// A write refused by a read-only file system (EROFS) exits 73, "cannot create output", as
/// sysexits asks of file-system problems (77 is for higher-level permission).
@Suite struct CLIReadOnlyFileSystemTests {
  /// Bind-mounts `source` on `target` read-only (`mount --bind`, then a read-only remount,
  /// as the kernel wants for a bind mount), or skips the test when mounting is not permitted
  /// here. Unmount with ``unmount(_:)``.
  private func mountReadOnly(_ source: String, on target: String) throws {
    try FaultTools.requireRoot("mount --bind")
    let mount = try FaultTools.tool("mount")
    let bind = try ChildProcess.run(mount, ["--bind", source, target])
    guard bind.succeeded else { try Test.cancel("mount is not permitted here: \(bind.standardError)") }
    let readOnly = try ChildProcess.run(mount, ["-o", "remount,ro,bind", target])
    guard readOnly.succeeded else {
      unmount(target)
      try Test.cancel("a read-only remount is not permitted here: \(readOnly.standardError)")
    }
  }

  /// `set` on a read-only bind mount: 73, a message naming the file and the read-only file
  /// system, the file unchanged. With the lock file already there the refusal is the temp
  /// file's; without, the lock file's own creation.
  @Test(arguments: [true, false])
  func aWriteOnAReadOnlyFileSystemExits73(lockFileExists: Bool) throws {
    try withTemporaryDirectory { directory in
      let source = directory.file("source")
      let target = directory.file("ro")
      try FileManager.default.createDirectory(atPath: source, withIntermediateDirectories: false)
      try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: false)
      try CLI.write("{\"a\": 1}\n", to: source + "/config.json")
      if lockFileExists { try CLI.write("", to: source + "/config.json.lock") }
      try mountReadOnly(source, on: target)
      defer { unmount(target) }
      let file = target + "/config.json"

      let outcome = try CLI.run(["set", file, "a", "2"])
      #expect(outcome.status == 73, "\(outcome.summary)")
      #expect(outcome.standardError.hasPrefix("ccsync: cannot write '\(file)': read-only file system ("), "\(outcome.summary)")
      #expect(CLI.lines(outcome.standardError).count == 1, "\(outcome.summary)")
      #expect(CLI.bytes(file) == Data("{\"a\": 1}\n".utf8))

      // The other writers map it the same way.
      let delete = try CLI.run(["delete", file, "a"])
      #expect(delete.status == 73, "\(delete.summary)")
      let save = try CLI.run(["save", file], input: "{}")
      #expect(save.status == 73, "\(save.summary)")
    }
  }
}
