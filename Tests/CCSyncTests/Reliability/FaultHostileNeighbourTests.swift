import Foundation
import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

/// Hostile neighbours (issue 7, part 4): in a world-writable sticky directory (`/tmp`),
/// another user (65534) plants symlinks and FIFOs at every name ccsync uses. A root writer
/// never follows them: the victim file they point at is untouched, the data file does not
/// become a symlink, and the save fails with a clear error or picks another temp name.
@Suite(.serialized) struct FaultHostileNeighbourTests {
  /// A sticky 1777 directory `shared` owned by root, a root-owned `victim` file beside it
  /// (outside), and the data file `shared/settings.json` owned by root.
  struct Scene {
    let directory: TemporaryDirectory
    var shared: String { directory.file("shared") }
    var path: String { shared + "/settings.json" }
    var victim: String { directory.file("victim") }
    let victimStatus: stat

    init(in directory: TemporaryDirectory) throws {
      self.directory = directory
      #expect(chmod(directory.path, 0o755) == 0)
      try FileManager.default.createDirectory(atPath: directory.file("shared"), withIntermediateDirectories: false)
      #expect(chmod(directory.file("shared"), 0o1777) == 0)
      writeFile(directory.file("victim"), "victim: root's file\n")
      writeFile(directory.file("shared/settings.json"), #"{"counter": 1}"#)
      victimStatus = try statusOf(directory.file("victim"))
    }

    /// Plants a symlink at `name` in the shared directory, owned by user 65534.
    func plantSymlink(_ name: String, to destination: String) throws {
      try symlink(shared + "/" + name, to: destination)
      #expect(lchown(shared + "/" + name, 65534, 65534) == 0)
    }

    /// The victim is byte-identical and was not touched (same inode and times); the data
    /// file is a regular file, not a link.
    func expectUnharmed(_ label: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
      #expect(try String(contentsOfFile: victim, encoding: .utf8) == "victim: root's file\n", "\(label)", sourceLocation: sourceLocation)
      let now = try statusOf(victim)
      #expect(now.st_ino == victimStatus.st_ino && now.st_mtim.tv_sec == victimStatus.st_mtim.tv_sec
              && now.st_mtim.tv_nsec == victimStatus.st_mtim.tv_nsec && now.st_mode == victimStatus.st_mode,
              "\(label): victim touched", sourceLocation: sourceLocation)
      #expect(try linkStatusOf(path).st_mode & S_IFMT == S_IFREG, "\(label): the data file is not a regular file", sourceLocation: sourceLocation)
    }
  }

  /// Runs `body` with a new ``Scene`` in a temporary directory, removed afterwards; skipped
  /// unless this process runs as root.
  private func withScene(_ body: (Scene) throws -> Void) throws {
    try FaultTools.requireRoot("files owned by another user")
    try withTemporaryDirectory { directory in try body(Scene(in: directory)) }
  }

  /// The lock's name is a symlink to the victim, and 500 temp names are too: the lock open
  /// (`O_NOFOLLOW`) fails with an error saying what is there; nothing is written anywhere.
  @Test func plantedLockSymlinkIsRefusedAndTheVictimIsUntouched() throws {
    try withScene { scene in
      try scene.plantSymlink("settings.json.lock", to: scene.victim)
      for _ in 0..<500 {
        try scene.plantSymlink(".settings.json.tmp-" + FileSystem.randomSuffix(length: AtomicReplace.suffixLength), to: scene.victim)
      }

      let run = try ChildProcess.run(testHelper(), ["update-once", scene.path])

      #expect(run.standardOutput == "failed '\(scene.path).lock' is a symbolic link, not a regular file\n", "\(run.standardError)")
      try scene.expectUnharmed("planted lock")
      #expect(try String(contentsOfFile: scene.path, encoding: .utf8) == #"{"counter": 1}"#)
      #expect(try linkStatusOf(scene.path + ".lock").st_mode & S_IFMT == S_IFLNK)
    }
  }

  /// A FIFO at the lock's name must not block the open (readers of a FIFO wait for a writer).
  @Test func plantedLockFIFOIsRefusedWithoutHanging() throws {
    try withScene { scene in
      #expect(mkfifo(scene.path + ".lock", 0o666) == 0)
      #expect(chown(scene.path + ".lock", 65534, 65534) == 0)

      let run = try ChildProcess.run(testHelper(), ["update-once", scene.path], deadline: .seconds(10))

      #expect(!run.timedOut, "the lock open blocked on a FIFO")
      #expect(run.standardOutput == "failed '\(scene.path).lock' is a FIFO, not a regular file\n", "\(run.standardError)")
      try scene.expectUnharmed("planted FIFO")
    }
  }

  /// Temp names planted as symlinks are skipped (`O_EXCL|O_NOFOLLOW` gives `EEXIST`) and
  /// another name is drawn; if every name drawn is taken the save fails without following
  /// any. The names are forced here: random ones would never collide.
  @Test func plantedTemporaryNamesAreSkippedNeverFollowed() throws {
    try withScene { scene in
      let planted = (0..<5).map { "Planted\($0)" }
      for suffix in planted { try scene.plantSymlink(".settings.json.tmp-" + suffix, to: scene.victim) }
      let queue = Locked(planted + ["FreeName"])
      var replace = AtomicReplace(target: scene.path, displayPath: scene.path, durable: true)
      replace.makeSuffix = { queue.next() ?? "FreeNam2" }

      try replace.write(Array(#"{"counter": 2}"#.utf8))

      try scene.expectUnharmed("skipped names")
      #expect(try String(contentsOfFile: scene.path, encoding: .utf8) == #"{"counter": 2}"#)
      for suffix in planted {
        #expect(try linkStatusOf(scene.shared + "/.settings.json.tmp-" + suffix).st_mode & S_IFMT == S_IFLNK)
      }

      var exhausted = AtomicReplace(target: scene.path, displayPath: scene.path, durable: true)
      exhausted.makeSuffix = { "Planted0" }
      let error = #expect(throws: StoreError.self) { try exhausted.write(Array("{}".utf8)) }
      #expect("\(error.map { "\($0)" } ?? "")".hasSuffix("File exists (errno 17)"), "\(String(describing: error))")
      try scene.expectUnharmed("every name taken")
      #expect(try String(contentsOfFile: scene.path, encoding: .utf8) == #"{"counter": 2}"#)
    }
  }

  /// Before the data file exists, another user plants it as a symlink to the victim. The
  /// kernel's `fs.protected_symlinks` would stop an `open` through it, but ccsync resolves
  /// links itself (to replace the target and keep the link), so it applies the same rule:
  /// another user's link in a sticky world-writable directory is not followed, for reads or
  /// writes. The writer's own links there still are.
  @Test func plantedDataFileSymlinkIsNotFollowed() throws {
    try withScene { scene in
      #expect(unlink(scene.path) == 0)
      try scene.plantSymlink("settings.json", to: scene.victim)

      let run = try ChildProcess.run(testHelper(), ["update-once", scene.path])

      #expect(run.standardOutput == "failed follow another user's symbolic link in a world-writable sticky directory '\(scene.path)': Permission denied (errno 13)\n", "\(run.standardError)")
      // CodableStorage would keep an invalid file's bytes and write over it: through the link,
      // that would be the victim.
      let storage = try ChildProcess.run(testHelper(), ["increment", scene.path, "1"])
      #expect(storage.standardError.contains("follow another user's symbolic link"), "\(storage.standardError)")
      let read = try ChildProcess.run(testHelper(), ["read-document", scene.path])
      #expect(read.standardOutput.hasPrefix("invalid follow another user's symbolic link"), "\(read.standardOutput)")
      #expect(try String(contentsOfFile: scene.victim, encoding: .utf8) == "victim: root's file\n")
      #expect(try linkStatusOf(scene.path).st_mode & S_IFMT == S_IFLNK, "the planted link itself is left alone")
      #expect(try scene.directory.names() == ["shared", "victim"], "a corrupt copy of the victim was made")

      // The same link made by the writer itself is followed, as any symlinked file is.
      #expect(lchown(scene.path, 0, 0) == 0)
      let own = try ChildProcess.run(testHelper(), ["update-once", scene.path])
      #expect(own.standardOutput.hasPrefix("failed") && own.standardOutput.contains("is not valid JSON"), "\(own.standardOutput)")
    }
  }

  /// The temp file is created `O_WRONLY|O_CREAT|O_EXCL|O_NOFOLLOW` with mode 0600, and the
  /// lock file is opened `O_NOFOLLOW`, as strace sees them.
  @Test func temporaryFileIsCreatedExclusiveNoFollowMode0600() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      writeFile(path, "{}")

      let run = try runHelperTraced(["save-once", path, #"{"a":1}"#], strace: ["-e", "trace=openat"], keepTrace: true)

      #expect(run.helper.succeeded)
      let lines = run.trace.split(separator: "\n")
      let create = try #require(lines.first { $0.contains(directory.file(".settings.json.tmp-")) }, "\(run.trace)")
      #expect(create.contains("O_WRONLY|O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC, 0600)"), "\(create)")
      let lock = try #require(lines.first { $0.contains("\"\(path).lock\"") })
      #expect(lock.contains("O_NOFOLLOW") && lock.contains("O_NONBLOCK"), "\(lock)")
    }
  }
}

/// A queue of names handed out one at a time from any thread. `@unchecked Sendable`: the
/// array is guarded by the lock.
final class Locked: @unchecked Sendable {
  private let lock = NSLock()
  private var items: [String]
  init(_ items: [String]) { self.items = items }
  func next() -> String? {
    lock.lock()
    defer { lock.unlock() }
    return items.isEmpty ? nil : items.removeFirst()
  }
}
