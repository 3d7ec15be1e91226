import Foundation
import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

/// The System layer's child processes, signals and descriptors the CLI runs on.
@Suite struct SubprocessTests {
  @Test func anExitCodeAndADeathBySignalAreDecoded() throws {
    let exited = try Subprocess.spawn(["/bin/sh", "-c", "exit 3"])
    let exitStatus = try exited.waitForExit()
    #expect(exitStatus == .exited(code: 3))
    #expect(exitStatus.shellStatus == 3)
    let killed = try Subprocess.spawn(["/bin/sh", "-c", "kill -TERM $$"])
    let killStatus = try killed.waitForExit()
    #expect(killStatus == .signaled(.terminate))
    #expect(killStatus.shellStatus == 128 + SIGTERM)
    #expect(throws: SystemError.self) { try killed.waitForExit() }  // reaped: ECHILD
  }

  /// A descriptor opened without close-on-exec (as another library's pipe may be) reaches a
  /// child unless it is asked to close everything above 2, as a long-lived server must.
  @Test func aChildCanBeStartedWithoutTheDescriptorsItWouldInherit() throws {
    var ends: [Int32] = [0, 0]
    #expect(pipe(&ends) == 0)  // no O_CLOEXEC
    defer { close(ends[0]); close(ends[1]) }
    let script = "test -e /proc/self/fd/\(ends[1]) && exit 7 || exit 0"
    let inheriting = try Subprocess.spawn(["/bin/sh", "-c", script])
    #expect(try inheriting.waitForExit() == .exited(code: 7), "the descriptor is inherited by default")
    let closing = try Subprocess.spawn(["/bin/sh", "-c", script], closingInheritedDescriptors: true)
    #expect(try closing.waitForExit() == .exited(code: 0), "the descriptor was closed in the child")
  }

  @Test func aCommandThatCannotRunIsATypedErrorNamingIt() {
    let missing = #expect(throws: SystemError.self) { try Subprocess.spawn(["ccsync-no-such-command"]) }
    #expect(missing?.errorNumber == .noSuchFileOrDirectory)
    #expect(missing?.operation == "run")
    #expect(missing?.path == "ccsync-no-such-command")
    let notExecutable = #expect(throws: SystemError.self) { try Subprocess.spawn(["/etc/passwd"]) }
    #expect(notExecutable?.errorNumber == .permissionDenied)
    let empty = #expect(throws: SystemError.self) { try Subprocess.spawn([]) }
    #expect(empty?.errorNumber == .noSuchFileOrDirectory)
  }

  @Test func standardStreamsAndEnvironmentChangesReachTheChild() throws {
    let input = try FileDescriptor.temporaryFile(containing: Array("from stdin\n".utf8))
    let output = try FileDescriptor.temporaryFile(containing: [])
    let child = try Subprocess.spawn(
      ["/bin/sh", "-c", #"cat; echo "$CCSYNC_TEST_VALUE ${PATH+path} ${HOME-unset}""#],
      environment: ["CCSYNC_TEST_VALUE": "x y", "HOME": nil], standardInput: input, standardOutput: output)
    #expect(try child.waitForExit() == .exited(code: 0))
    #expect(String(decoding: try output.readContents(), as: UTF8.self) == "from stdin\nx y path unset\n")
  }

  @Test func aNewProcessGroupIsSignalledWhole() throws {
    let pipe = try FileDescriptor.makePipe(nonBlockingRead: true)
    let child = try Subprocess.spawn(
      ["/bin/sh", "-c", "sleep 30 & echo $!; wait"], standardOutput: pipe.writeEnd, newProcessGroup: true)
    try pipe.writeEnd.close()
    var text = ""
    let deadline = ContinuousClock.now + .seconds(10)
    while !text.contains("\n") && ContinuousClock.now < deadline {
      _ = try waitForInput(from: [pipe.readEnd], timeout: .seconds(1))
      text += String(decoding: try pipe.readEnd.readAvailable(), as: UTF8.self)
    }
    let grandchild = try #require(Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)))
    #expect(try child.exitStatusIfExited() == nil)

    try child.sendToProcessGroup(.terminate)
    #expect(try child.waitForExit() == .signaled(.terminate))
    // The grandchild got it too: it is gone, or a zombie waiting for a reaper.
    #expect(waitUntil {
      guard let stat = try? String(contentsOfFile: "/proc/\(grandchild)/stat", encoding: .utf8) else { return true }
      return stat.split(separator: ")").last?.trimmingPrefix(" ").first == "Z"
    })
  }

  @Test func aChildGetsAnIgnoredSignalBackAtItsDefaultAction() throws {
    try Signal.quit.ignore()
    defer { try? Signal.quit.restoreActionAtStart() }
    let child = try Subprocess.spawn(["/bin/sh", "-c", "kill -QUIT $$; exit 0"])
    #expect(try child.waitForExit() == .signaled(.quit))
    let error = #expect(throws: SystemError.self) { try Signal.kill.ignore() }
    #expect(error?.code == EINVAL)
  }

  @Test func caughtSignalsArriveOnThePipeInOrder() throws {
    let first = Signal(rawValue: SIGUSR1)
    let second = Signal(rawValue: SIGUSR2)
    let signals = try SignalPipe.install([first, second])
    #expect(try SignalPipe.install([]) === signals)
    // `raise` signals the calling thread only, so no other test's system call is interrupted.
    raise(SIGUSR1)
    raise(SIGUSR2)
    #expect(try waitForInput(from: [signals], timeout: .seconds(10)) == [true])
    #expect(signals.drain() == [first, second])
    #expect(signals.drain() == [])
  }
}

@Suite struct FileDescriptorTests {
  @Test func aNonBlockingPipeReportsInputAndItsEnd() throws {
    let pipe = try FileDescriptor.makePipe(nonBlockingRead: true)
    #expect(try pipe.readEnd.readAvailable() == [])
    #expect(try waitForInput(from: [pipe.readEnd], timeout: .zero) == [false])
    try pipe.writeEnd.writeAll(Array("abc".utf8))
    #expect(try waitForInput(from: [pipe.readEnd], timeout: .seconds(10)) == [true])
    #expect(try pipe.readEnd.readAvailable() == Array("abc".utf8))
    try pipe.writeEnd.close()
    try pipe.writeEnd.close()  // a second close does nothing
    #expect(try waitForInput(from: [pipe.readEnd], timeout: .seconds(10)) == [true])  // hung up
    #expect(try pipe.readEnd.readAvailable() == [])
  }

  @Test func readingTheContentsLeavesTheOffsetAlone() throws {
    let file = try FileDescriptor.temporaryFile(containing: Array("hello".utf8))
    #expect(try file.readContents() == Array("hello".utf8))
    #expect(try file.readContents() == Array("hello".utf8))
    #expect(try file.readAvailable() == Array("hello".utf8))  // still at the start
    #expect(try file.readAvailable() == [])
  }

  @Test func anotherThreadWakesTheWaiter() throws {
    let wake = try WakeUpChannel()
    #expect(try waitForInput(from: [wake], timeout: .zero) == [false])
    Thread.detachNewThread {
      Thread.sleep(forTimeInterval: 0.05)
      wake.wakeUp()
      wake.wakeUp()
    }
    #expect(try waitForInput(from: [wake], timeout: .seconds(10)) == [true])
    #expect(waitUntil {
      wake.drain()
      return (try? waitForInput(from: [wake], timeout: .milliseconds(100))) == [false]
    })
  }

  @Test func createNewRefusesAnExistingFile() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("copy.json")
      try FileDescriptor.createNew(path, permissions: 0o600).writeAll(Array("{}".utf8))
      #expect(try String(contentsOfFile: path, encoding: .utf8) == "{}")
      let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
      #expect(mode == 0o600)
      let error = #expect(throws: SystemError.self) { try FileDescriptor.createNew(path, permissions: 0o600) }
      #expect(error?.errorNumber == .fileExists)
      #expect(error?.path == path)
    }
  }

  @Test func aThreadSleepLastsAtLeastItsDuration() {
    let start = ContinuousClock.now
    ContinuousClock.sleepThread(for: .milliseconds(50))
    #expect(ContinuousClock.now - start >= .milliseconds(50))
    let beforeZero = ContinuousClock.now
    ContinuousClock.sleepThread(for: .seconds(-1))
    #expect(ContinuousClock.now - beforeZero < .seconds(1))
  }
}
