import Foundation
import Testing
@testable import CCSync
import CCSyncProcesses
import CCSyncSystem

/// The one supervisor of a command's child (`lock`, `lock` over etcd, `watch`), with real
/// shell processes: signals passed on, the reload signal, SIGKILL after the grace period, the
/// status, and a process group stopped whole.
@Suite struct ChildSupervisorTests {
  /// Reaps and ticks until the command has ended or `deadline` passes; its status.
  private func status(of supervisor: ChildSupervisor, deadline: Duration = .seconds(20)) -> Int32? {
    var status: Int32?
    _ = waitUntil(deadline: deadline) {
      supervisor.tick(now: .now)
      status = supervisor.reap()
      return status != nil
    }
    return status
  }

  @Test func signalsPassedOnAndTheReloadSignalReachTheCommandAndItsStatusIsReported() throws {
    try withTemporaryDirectory { directory in
      let ready = directory.file("ready"), log = directory.file("log")
      let script = "trap 'echo hup >> \(log)' HUP; trap 'echo usr1 >> \(log)' USR1; trap 'exit 3' TERM; "
        + "touch \(ready); while :; do sleep 0.02; done"
      let supervisor = ChildSupervisor(command: ["/bin/sh", "-c", script])
      try supervisor.start()
      #expect(supervisor.isRunning)
      #expect(waitUntil { FileManager.default.fileExists(atPath: ready) })
      supervisor.forward(.hangUp)
      #expect(waitUntil { (try? String(contentsOfFile: log, encoding: .utf8)) == "hup\n" })
      supervisor.reload(with: Signal(rawValue: SIGUSR1))
      #expect(waitUntil { (try? String(contentsOfFile: log, encoding: .utf8)) == "hup\nusr1\n" })
      supervisor.forward(.terminate)
      #expect(status(of: supervisor) == 3)
      #expect(!supervisor.isRunning && !supervisor.stopRequested)
    }
  }

  /// A command that ignores SIGTERM is stopped with SIGKILL once the grace period passes
  /// (128 + 9), and so is what it started in its group.
  @Test func aCommandThatIgnoresSigtermIsKilledAfterTheGracePeriod() throws {
    try withTemporaryDirectory { directory in
      let started = directory.file("started")
      let script = "trap '' TERM; sh -c 'trap \"\" TERM; echo $$ > \(started).tmp; mv \(started).tmp \(started); while :; do sleep 0.02; done' & wait"
      let supervisor = ChildSupervisor(command: ["/bin/sh", "-c", script], ownProcessGroup: true, killDelay: .milliseconds(300))
      try supervisor.start()
      #expect(waitUntil { FileManager.default.fileExists(atPath: started) })
      let grandchild = try #require(Int32((try String(contentsOfFile: started, encoding: .utf8)).trimmingCharacters(in: .whitespacesAndNewlines)))
      supervisor.stop()
      #expect(supervisor.stopRequested)
      #expect(supervisor.nextDeadline != nil)
      #expect(status(of: supervisor) == 128 + SIGKILL)
      #expect(waitUntil { isGone(grandchild) }, "what the command started was killed with it")
    }
  }

  /// Shutting down stops the command and waits for its whole group.
  @Test func shutDownStopsTheCommandAndWhatItStarted() throws {
    try withTemporaryDirectory { directory in
      let started = directory.file("started")
      let script = "sleep 30 & echo $! > \(started).tmp; mv \(started).tmp \(started); wait"
      let supervisor = ChildSupervisor(command: ["/bin/sh", "-c", script], ownProcessGroup: true, killDelay: .seconds(5))
      try supervisor.start()
      #expect(waitUntil { FileManager.default.fileExists(atPath: started) })
      let sleeper = try #require(Int32((try String(contentsOfFile: started, encoding: .utf8)).trimmingCharacters(in: .whitespacesAndNewlines)))
      supervisor.shutDown()
      #expect(!supervisor.isRunning)
      #expect(waitUntil { isGone(sleeper) }, "the command's own child is gone once shutDown returns")
    }
  }

  @Test func aCommandThatCannotBeFoundIsReportedWithTheCommandsName() throws {
    let supervisor = ChildSupervisor(command: ["/nonexistent/ccsync-no-such-command"])
    let error = #expect(throws: SystemError.self) { try supervisor.start() }
    #expect(error?.errorNumber == .noSuchFileOrDirectory)
    #expect(!supervisor.isRunning)
  }
}

/// Whether process `pid` has ended: gone, or a zombie its new parent has not reaped yet.
private func isGone(_ pid: Int32) -> Bool {
  guard kill(pid, 0) == 0 else { return true }
  guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let close = stat.lastIndex(of: ")") else { return true }
  return stat[stat.index(close, offsetBy: 2)] == "Z"
}
