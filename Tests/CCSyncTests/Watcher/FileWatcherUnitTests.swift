import Foundation
import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
@testable import CCSyncSystem

extension FileWatcherTests {
  /// The pieces under the watcher: event parsing, path resolution, file identity, merging.
  @Suite struct Units {
    /// Builds the bytes `read` returns for inotify records.
    func record(watch: Int32, mask: UInt32, cookie: UInt32 = 0, name: String, padTo length: Int? = nil) -> [UInt8] {
      var name = Array(name.utf8)
      if !name.isEmpty || length != nil { name.append(0) }
      while name.count < (length ?? (name.count + 15) / 16 * 16) { name.append(0) }
      var bytes: [UInt8] = []
      withUnsafeBytes(of: watch.littleEndian) { bytes += $0 }
      withUnsafeBytes(of: mask.littleEndian) { bytes += $0 }
      withUnsafeBytes(of: cookie.littleEndian) { bytes += $0 }
      withUnsafeBytes(of: UInt32(name.count).littleEndian) { bytes += $0 }
      return bytes + name
    }

    @Test func parsesVariableLengthRecords() {
      let bytes = record(watch: 1, mask: InotifyMask.create, name: "app.json")
        + record(watch: 2, mask: InotifyMask.deleteSelf, name: "")
        + record(watch: 1, mask: InotifyMask.movedTo, cookie: 7, name: "a-name-longer-than-sixteen-bytes")
        + record(watch: -1, mask: InotifyMask.overflow, name: "")
      let events = bytes.withUnsafeBytes { InotifyInstance.parse($0) }
      #expect(events == [
        InotifyEvent(watch: 1, mask: InotifyMask.create, cookie: 0, name: "app.json"),
        InotifyEvent(watch: 2, mask: InotifyMask.deleteSelf, cookie: 0, name: ""),
        InotifyEvent(watch: 1, mask: InotifyMask.movedTo, cookie: 7, name: "a-name-longer-than-sixteen-bytes"),
        InotifyEvent(watch: -1, mask: InotifyMask.overflow, cookie: 0, name: ""),
      ])
    }

    @Test func truncatedRecordEndsTheParse() {
      let whole = record(watch: 1, mask: InotifyMask.create, name: "a") + record(watch: 1, mask: InotifyMask.create, name: "b")
      #expect(whole.count == 64)  // Two records of 16 header bytes and 16 name bytes.
      for (cut, names) in [(63, ["a"]), (48, ["a"]), (32, ["a"]), (20, []), (5, [])] {
        let events = Array(whole[..<cut]).withUnsafeBytes { InotifyInstance.parse($0) }
        #expect(events.map(\.name) == names, "cut at \(cut)")
      }
      // A length field pointing far beyond the buffer.
      var lying = record(watch: 1, mask: InotifyMask.create, name: "x")
      lying[12] = 0xFF
      lying[13] = 0xFF
      #expect(lying.withUnsafeBytes { InotifyInstance.parse($0) }.isEmpty)
    }

    @Test func resolvesAConfigMapChain() throws {
      try withTemporaryDirectory { directory in
        try shell("""
          mkdir -p ..2026_a && echo one > ..2026_a/app.json && ln -s ..2026_a ..data && ln -s ..data/app.json app.json
          """, in: directory.path)
        let points = watchPoints(resolving: directory("app.json"))
        #expect(points.map { "\($0.directory)/\($0.name)\($0.isTarget ? " (target)" : "")" } == [
          directory("app.json"), directory("..data"), directory("..2026_a/app.json (target)"),
        ])
      }
    }

    @Test func resolvesMissingPartsToTheNearestAncestor() throws {
      try withTemporaryDirectory { directory in
        let points = watchPoints(resolving: directory("a/b/app.json"))
        #expect(points.count == 1)
        #expect(points.first?.directory == directory.path)
        #expect(points.first?.name == "a")
        #expect(points.first?.isTarget == false)
        try shell("touch a", in: directory.path)  // A file where a directory is needed: ENOTDIR.
        #expect(watchPoints(resolving: directory("a/b/app.json")).map(\.name) == ["a"])
      }
    }

    @Test func symlinkLoopsEndTheWalk() throws {
      try withTemporaryDirectory { directory in
        try shell("ln -s loop2 loop1 && ln -s loop1 loop2", in: directory.path)
        let points = watchPoints(resolving: directory("loop1"))
        #expect(points.count == 41)
        #expect(points.allSatisfy { !$0.isTarget })
      }
    }

    @Test func relativePathsAndDotDot() throws {
      try withTemporaryDirectory { directory in
        try shell("mkdir -p a/b && ln -s ../.. a/b/up && echo x > top.json", in: directory.path)
        let points = watchPoints(resolving: directory("a/b/up/top.json"))
        #expect(points.last?.directory == directory.path)
        #expect(points.last?.name == "top.json")
        #expect(points.last?.isTarget == true)
        #expect(try absolutePath("/x//y/./z/") == "/x/y/z")
        #expect(normalizedPath("x//y/./z/") == "/x/y/z")
        #expect(FilePath.directory(of: "/x") == "/")
        #expect(FilePath.name(of: "/x/y") == "y")
      }
    }

    @Test func fileIdentityFollowsLinksAndReportsMissingAsNil() throws {
      try withTemporaryDirectory { directory in
        #expect(try fileIdentity(atPath: directory("missing")) == nil)
        try shell("echo one > file && ln -s file link && ln -s nowhere dangling", in: directory.path)
        #expect(try fileIdentity(atPath: directory("file/below")) == nil)  // ENOTDIR
        #expect(try fileIdentity(atPath: directory("dangling")) == nil)
        let first = try #require(try fileIdentity(atPath: directory("link")))
        #expect(first == (try fileIdentity(atPath: directory("file"))))
        #expect(first.size == 4)
        try shell("echo two-longer > file", in: directory.path)
        let second = try #require(try fileIdentity(atPath: directory("file")))
        #expect(second.inode == first.inode)
        #expect(second != first)
        try shell("echo three > .tmp && mv .tmp file", in: directory.path)
        #expect(try fileIdentity(atPath: directory("file"))?.inode != first.inode)
      }
    }

    @Test func reasonsMergeToTheStrongest() {
      let inPlace = FileWatchReason.directoryEvent(inPlaceWrite: true)
      let rename = FileWatchReason.directoryEvent(inPlaceWrite: false)
      #expect(rename.merged(with: inPlace) == inPlace)
      #expect(inPlace.merged(with: rename) == inPlace)
      #expect(FileWatchReason.safetyRecheck.merged(with: .overflow) == .overflow)
      #expect(FileWatchReason.rearmed.merged(with: inPlace) == .rearmed)
      #expect(inPlace.contentMayChangeInPlace && !rename.contentMayChangeInPlace)
    }

    /// A state with one registration for `directory/app.json`, holding inotify watch 5 on
    /// the directory (no real inotify instance: `handle` is driven with made-up events).
    func stateWatchingAppJSON(in directory: TemporaryDirectory) throws -> WatcherState {
      var state = WatcherState(pollInterval: nil, fallbackPollInterval: .seconds(1),
                               safetyRecheckInterval: nil, faults: WatcherFaults(), diagnostics: { _ in })
      let points = watchPoints(resolving: directory("app.json"))
      let identity = try #require(points.first?.directoryIdentity)
      var registration = Registration(path: directory("app.json"), handler: { _ in })
      registration.watchPoints = points
      registration.armed = [directory.path: ArmedDirectory(watch: 5, identity: identity)]
      state.registrations[1] = registration
      state.directories[5] = DirectoryWatch(path: directory.path, identity: identity, references: [1: 1])
      return state
    }

    func event(_ mask: UInt32, _ name: String = "", watch: Int32 = 5) -> InotifyEvent {
      InotifyEvent(watch: watch, mask: mask, cookie: 0, name: name)
    }

    @Test func oneBatchWakesOnceAndSideFilesNotAtAll() throws {
      try withTemporaryDirectory { directory in
        var state = try stateWatchingAppJSON(in: directory)
        state.handle([event(InotifyMask.create, "4913"), event(InotifyMask.delete, "4913"),
                      event(InotifyMask.create, ".app.json.swp"), event(InotifyMask.movedTo, "app.json~"),
                      event(InotifyMask.create, "app.json.lock"), event(InotifyMask.modify, "app.json.corrupt-1")])
        #expect(state.wakes.isEmpty)
        state.handle([event(InotifyMask.create, "app.json"), event(InotifyMask.modify, "app.json"),
                      event(InotifyMask.closeWrite, "app.json"), event(InotifyMask.create, "4913")])
        #expect(state.wakes == [1: .directoryEvent(inPlaceWrite: true)])
        state.wakes = [:]
        state.handle([event(InotifyMask.movedTo, "app.json"), event(InotifyMask.overflow, watch: -1)])
        #expect(state.wakes == [1: .overflow])
      }
    }

    @Test func ownRemovalsIgnoredEventIsSwallowed() throws {
      try withTemporaryDirectory { directory in
        var state = try stateWatchingAppJSON(in: directory)
        // We removed watch 5 earlier and the kernel reused the number for the watch held now:
        // the IN_IGNORED of the removal must not be taken for this directory vanishing.
        state.ownRemovals[5] = 1
        state.handle([event(InotifyMask.ignored)])
        #expect(state.ownRemovals.isEmpty)
        #expect(state.directories[5] != nil)
        #expect(state.registrations[1]?.armed[directory.path]?.watch == 5)
        // The kernel's own IN_IGNORED (directory deleted): the watch is forgotten.
        state.handle([event(InotifyMask.ignored)])
        #expect(state.directories[5] == nil)
        #expect(state.registrations[1]?.armed.isEmpty == true)
      }
    }

    @Test func releasingAHandlerThatOwnsAWatchDoesNotDeadlock() throws {
      let scenario = try WatchScenario()
      let outer = scenario.watcher.watch(scenario.directory("outer.json")) {
        [holder = WatchHolder(scenario.watcher.watch(scenario.directory("inner.json")) { _ in })] _ in
        _ = holder
      }
      #expect(scenario.watcher.watchedDirectoryCount == 1)
      // Cancelling frees the handler, the last owner of the inner watch, whose deinit cancels
      // it: that must happen outside the watcher's lock. On another thread, so that a deadlock
      // fails the test instead of hanging the run.
      let cancelled = BackgroundThread { outer.cancel() }
      #expect(throws: Never.self) { try cancelled.value(deadline: .seconds(10)) }
      #expect(scenario.watcher.watchedDirectoryCount == 0)
    }
  }
}

/// Owns a watch, as a subscriber object would.
final class WatchHolder: Sendable {
  let watch: FileWatch
  init(_ watch: FileWatch) { self.watch = watch }
}
