import Foundation
import Testing

/// `ccsync lock`: the command's status passes through, conflicts exit 1 or the chosen code,
/// and the lock is released when the command exits, whatever it left behind.
@Suite struct CLILockTests {
  @Test func commandStatusPassesThrough() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      let exit7 = try CLI.run(["lock", file, "--", "sh", "-c", "exit 7"])
      #expect(exit7.status == 7 && !exit7.signaled, "\(exit7.summary)")
      let output = try CLI.run(["lock", file, "--", "echo", "held"])
      #expect(output.status == 0 && output.standardOutput == "held\n")
      // Without `--`, the operand after FILE starts the command, options and all.
      let noDashes = try CLI.run(["lock", "-s", file, "sh", "-c", "echo $0 --help", "x"])
      #expect(noDashes.status == 0 && noDashes.standardOutput == "x --help\n", "\(noDashes.summary)")
      let killed = try CLI.run(["lock", file, "--", "sh", "-c", "kill -TERM $$"])
      #expect(killed.status == 128 + SIGTERM && !killed.signaled, "\(killed.summary)")
      let notFound = try CLI.run(["lock", file, "--", "no-such-command-ccsync"])
      #expect(notFound.status == 127 && notFound.standardError.contains("no-such-command-ccsync"), "\(notFound.summary)")
      // The lock file is FILE.lock beside the file; the data file is not created.
      #expect(try directory.names() == ["c.json.lock"])
    }
  }

  @Test func conflictExitsOneOrTheChosenCode() throws {
    _ = try FaultTools.tool("flock")
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      let marker = directory.file("ran")
      let holder = try FlockHolder(lockFile: file + ".lock", in: directory)
      defer { holder.stop() }
      let conflict = try CLI.run(["lock", "-n", file, "--", "touch", marker])
      #expect(conflict.status == 1, "\(conflict.summary)")
      #expect(conflict.standardError.contains("'\(file)' is locked by another process"))
      let code = try CLI.run(["lock", "--nonblock", "-E", "42", file, "--", "touch", marker])
      #expect(code.status == 42, "\(code.summary)")
      let timed = try CLI.run(["lock", "--wait", "0.2", "--conflict-exit-code=3", file, "--", "touch", marker])
      #expect(timed.status == 3, "\(timed.summary)")
      // A shared lock conflicts with flock's exclusive one too.
      #expect(try CLI.run(["lock", "-s", "-n", file, "--", "touch", marker]).status == 1)
      #expect(!FileManager.default.fileExists(atPath: marker))
      holder.stop()
      #expect(try CLI.run(["lock", "-n", file, "--", "touch", marker]).status == 0)
      #expect(FileManager.default.fileExists(atPath: marker))
    }
  }

  @Test func writersWaitForTheHolder() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      let holder = try CLI.start(["lock", file, "--", "sleep", "0.5"])
      #expect(waitUntil { (try? CLI.run(["lock", "-n", file, "--", "true"]).status) == 1 })
      let clock = ContinuousClock()
      let start = clock.now
      let set = try CLI.run(["set", file, "a", "1"])
      #expect(set.status == 0, "\(set.summary)")
      #expect(clock.now - start >= .milliseconds(200))
      #expect(holder.wait().status == 0)
    }
  }

  @Test func lockIsReleasedWhenTheCommandExitsEvenWithChildrenLeft() throws {
    _ = try FaultTools.tool("flock")
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      let pidFile = directory.file("pid")
      // The command backgrounds a `sleep 30` and exits. The sleep closes the descriptors it
      // inherited except one open on the lock file, if there is one (there must not be): the
      // test runner's Process notices a child's exit only once every holder of a descriptor it
      // passed down has closed it, and would otherwise wait for the sleep.
      let background = """
        for entry in /proc/$BASHPID/fd/*; do n=${entry##*/}
          [ "$n" -gt 2 ] && [ "$(readlink "$entry")" != '\(file).lock' ] && eval "exec $n>&-"
        done 2>/dev/null; exec sleep 30
        """
      let outcome = try CLI.run(
        ["lock", file, "--", "bash", "-c", "( \(background) ) >/dev/null 2>&1 & echo $! > '\(pidFile)'; exit 0"],
        deadline: .seconds(20))
      #expect(!outcome.timedOut)
      defer {
        if let text = try? String(contentsOfFile: pidFile, encoding: .utf8), let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
          kill(pid, SIGKILL)
        }
      }
      #expect(outcome.status == 0, "\(outcome.summary)")
      let free = try ChildProcess.run("flock", ["-n", file + ".lock", "true"])
      #expect(free.status == 0, "the lock is still held after the command exited: \(free.summary)")
    }
  }

  @Test func sigtermIsPassedOnAndItsStatusReturned() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      let ready = directory.file("ready")
      let child = try CLI.start(["lock", file, "--", "sh", "-c", "trap 'exit 9' TERM; touch '\(ready)'; while :; do sleep 0.05; done"])
      #expect(waitUntil { FileManager.default.fileExists(atPath: ready) })
      kill(child.process.processIdentifier, SIGTERM)
      let outcome = child.wait(deadline: .seconds(10))
      #expect(outcome.status == 9 && !outcome.signaled, "\(outcome.summary)")
    }
  }

  /// `nohup ccsync lock FILE -- CMD`: a signal the caller started ccsync with ignored stays
  /// ignored, in ccsync and in CMD, as flock(1) leaves it; before, ccsync caught SIGHUP,
  /// passed it on and reset it to its default in CMD, which died of it.
  @Test func aSignalIgnoredAtStartStaysIgnoredInTheCommand() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      let started = directory.file("started")
      let done = directory.file("done")
      let stop = directory.file("stop")
      let holder = try ChildProcess.start("/bin/sh", [
        "-c", "trap '' HUP; exec \"$0\" lock \"$1\" -- sh -c 'touch \"$1\"; while [ ! -e \"$2\" ]; do sleep 0.02; done; touch \"$3\"' sh \"$2\" \"$3\" \"$4\"",
        CLI.executable(), file, started, stop, done,
      ])
      #expect(waitUntil { FileManager.default.fileExists(atPath: started) })
      kill(holder.process.processIdentifier, SIGHUP)
      _ = try ChildProcess.run("/bin/sh", ["-c", "pkill -HUP -P \(holder.process.processIdentifier) || true"])
      try CLI.write("", to: stop)
      let outcome = holder.wait(deadline: .seconds(10))
      #expect(outcome.status == 0 && !outcome.signaled, "\(outcome.summary)")
      #expect(FileManager.default.fileExists(atPath: done), "the command died of the SIGHUP")
    }
  }

  /// `--` ends the options, so a FILE that starts with `-` can follow it, as with flock(1);
  /// the command then starts at the next operand.
  @Test func aFileStartingWithADashFollowsDoubleDash() throws {
    try withTemporaryDirectory { directory in
      try CLI.write("{\"a\": 1}\n", to: directory.file("-dash.json"))
      let outcome = try ChildProcess.run(
        "/bin/sh", ["-c", "cd \"$0\" && exec \"$1\" lock -- -dash.json echo held", directory.path, CLI.executable()])
      #expect(outcome.status == 0 && outcome.standardOutput == "held\n", "\(outcome.summary)")
      #expect(FileManager.default.fileExists(atPath: directory.file("-dash.json.lock")))
    }
  }
}
