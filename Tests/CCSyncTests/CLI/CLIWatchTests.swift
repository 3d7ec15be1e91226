import Foundation
import Testing

/// `ccsync watch`: one compact line per distinct value, --count, --timeout, --poll, notes on
/// standard error for gaps, --exec and --restart.
@Suite struct CLIWatchTests {
  /// Waits until `watcher` has printed `count` lines.
  private func waitForLines(_ watcher: ChildProcess, _ count: Int, deadline: Duration = .seconds(10)) -> Bool {
    waitUntil(deadline: deadline) { CLI.lines(watcher.standardOutput).count >= count }
  }

  /// The process ids listed one a line in `file` (empty while it does not exist).
  private func processIDs(in file: String) -> [Int32] {
    (try? String(contentsOfFile: file, encoding: .utf8)).map { CLI.lines($0).compactMap { Int32($0) } } ?? []
  }

  /// Waits until `watch`, started by the test, has exited (or is a zombie). Not with
  /// ``ChildProcess/wait(deadline:)``: Foundation notices the exit only once every process
  /// that inherited a descriptor it gave the child has closed it, and a command the watch
  /// left running holds one.
  private func waitForExit(of watch: ChildProcess) -> Bool {
    waitUntil(deadline: .seconds(15)) { !isRunning(watch.process.processIdentifier) }
  }

  /// Whether process `pid` exists and is not a zombie.
  private func isRunning(_ pid: Int32) -> Bool {
    kill(pid, 0) == 0 && !((try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8))?.contains(") Z ") ?? true)
  }

  @Test(arguments: [false, true])
  func printsEachDistinctValueUntilCount(polling: Bool) throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      try CLI.write("{\"server\": {\"port\": 8080}, \"other\": 1}\n", to: file)
      let watcher = try CLI.start(["watch", "--count", "3"] + (polling ? ["--poll", "0.05"] : []) + [file, "server"])
      #expect(waitForLines(watcher, 1))
      #expect(try CLI.run(["set", file, "other", "2"]).status == 0)  // not a new value at PATH
      #expect(try CLI.run(["set", file, "server.port", "8081"]).status == 0)
      #expect(waitForLines(watcher, 2))
      #expect(try CLI.run(["set", file, "server.host", "h"]).status == 0)
      let outcome = watcher.wait(deadline: .seconds(10))
      #expect(outcome.status == 0 && !outcome.timedOut, "\(outcome.summary)")
      #expect(CLI.lines(outcome.standardOutput) == [
        "{\"port\":8080}", "{\"port\":8081}", "{\"port\":8081,\"host\":\"h\"}",
      ])
      #expect(outcome.standardError == "")
    }
  }

  @Test func timeoutWithAndWithoutCount() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      try CLI.write("{\"a\": 1}\n", to: file)
      let plain = try CLI.run(["watch", "--timeout", "0.3", file, "a"])
      #expect(plain.status == 0 && plain.standardOutput == "1\n", "\(plain.summary)")
      let short = try CLI.run(["watch", "--timeout=0.3", "--count", "2", file, "a"])
      #expect(short.status == 2 && short.standardOutput == "1\n", "\(short.summary)")
      #expect(short.standardError.contains("1 of 2"))
      let reached = try CLI.run(["watch", "--timeout", "5", "--count", "1", file, "a"])
      #expect(reached.status == 0 && reached.standardOutput == "1\n", "\(reached.summary)")
    }
  }

  @Test func sigintAndSigtermEndTheWatchWithStatusZero() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      try CLI.write("[1]\n", to: file)
      for signal in [SIGINT, SIGTERM] {
        let watcher = try CLI.start(["watch", file])
        #expect(waitForLines(watcher, 1))
        kill(watcher.process.processIdentifier, signal)
        let outcome = watcher.wait(deadline: .seconds(10))
        #expect(outcome.status == 0 && !outcome.signaled, "\(outcome.summary)")
        #expect(outcome.standardOutput == "[1]\n")
      }
    }
  }

  @Test func gapsAreNotedOnStandardErrorAndTheNextValueIsPrinted() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      let watcher = try CLI.start(["watch", "--count", "3", file, "a"])
      #expect(waitUntil { watcher.standardError.contains("does not exist") })
      #expect(try CLI.run(["set", file, "b", "1"]).status == 0)
      #expect(waitUntil { watcher.standardError.contains("no value at 'a'") })
      #expect(try CLI.run(["set", file, "a", "1"]).status == 0)
      #expect(waitForLines(watcher, 1))
      try CLI.write("{ not json", to: file)
      #expect(waitUntil { watcher.standardError.contains("is not valid JSON") })
      // The same value again after a gap is printed again.
      try CLI.write("{\"a\": 1}", to: file)
      #expect(waitForLines(watcher, 2))
      #expect(try CLI.run(["set", file, "a", "[true]"]).status == 0)
      let outcome = watcher.wait(deadline: .seconds(10))
      #expect(outcome.status == 0, "\(outcome.summary)")
      #expect(CLI.lines(outcome.standardOutput) == ["1", "1", "[true]"])
    }
  }

  @Test func execRunsTheCommandWithTheValue() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      let log = directory.file("log")
      try CLI.write("{\"a\": {\"b\": 1}}\n", to: file)
      let script = "printf '%s|%s|%s\\n' \"$CCSYNC_VALUE\" \"$(cat)\" \"$CCSYNC_FILE\" >> '\(log)'"
      let watcher = try CLI.start(["watch", "--count", "2", file, "a", "--exec", "--", "sh", "-c", script])
      #expect(waitUntil { (try? String(contentsOfFile: log, encoding: .utf8))?.isEmpty == false })
      #expect(try CLI.run(["set", file, "a.b", "\"two\""]).status == 0)
      let outcome = watcher.wait(deadline: .seconds(10))
      #expect(outcome.status == 0, "\(outcome.summary)")
      #expect(CLI.lines(outcome.standardOutput) == ["{\"b\":1}", "{\"b\":\"two\"}"])
      let runs = CLI.lines(try String(contentsOfFile: log, encoding: .utf8))
      #expect(runs == ["{\"b\":1}|{\"b\":1}|\(file)", "{\"b\":\"two\"}|{\"b\":\"two\"}|\(file)"])
    }
  }

  @Test func execCoalescesValuesArrivingWhileItRuns() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      let log = directory.file("log")
      let gate = directory.file("gate")
      try CLI.write("{\"n\": 0}\n", to: file)
      // Each run logs its value, then waits until the gate file exists.
      let script = "echo \"$CCSYNC_VALUE\" >> '\(log)'; while [ ! -e '\(gate)' ]; do sleep 0.02; done"
      let watcher = try CLI.start(["watch", "--count", "4", file, "n", "--", "sh", "-c", script])
      #expect(waitUntil { (try? String(contentsOfFile: log, encoding: .utf8)) == "0\n" })
      for value in 1...3 {
        #expect(try CLI.run(["set", file, "n", String(value)]).status == 0)
        #expect(waitForLines(watcher, value + 1))
      }
      #expect(FileManager.default.createFile(atPath: gate, contents: nil))
      let outcome = watcher.wait(deadline: .seconds(10))
      #expect(outcome.status == 0, "\(outcome.summary)")
      #expect(CLI.lines(outcome.standardOutput) == ["0", "1", "2", "3"])
      // Values 1 and 2 arrived while the first run waited: one more run, with the latest value.
      #expect(try String(contentsOfFile: log, encoding: .utf8) == "0\n3\n")
    }
  }

  @Test func restartRestartsTheCommandAndEndsWithItsStatus() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      let pids = directory.file("pids")
      try CLI.write("{\"mode\": \"run\"}\n", to: file)
      // Runs until killed, unless the value says "exit": then it exits 5 on its own.
      let script = "echo $$ >> '\(pids)'; [ \"$CCSYNC_VALUE\" = '\"exit\"' ] && exit 5; exec sleep 30"
      let watcher = try CLI.start(["watch", file, "mode", "--restart", "--", "sh", "-c", script])
      func startedPids() -> [Int32] {
        CLI.lines((try? String(contentsOfFile: pids, encoding: .utf8)) ?? "").compactMap { Int32($0) }
      }
      #expect(waitUntil { startedPids().count == 1 })
      let first = try #require(startedPids().first)
      #expect(kill(first, 0) == 0)
      #expect(try CLI.run(["set", file, "mode", "\"again\""]).status == 0)
      #expect(waitUntil { startedPids().count == 2 })
      #expect(waitUntil { kill(first, 0) != 0 }, "the first run was not stopped")
      #expect(try CLI.run(["set", file, "mode", "\"exit\""]).status == 0)
      let outcome = watcher.wait(deadline: .seconds(15))
      #expect(outcome.status == 5 && !outcome.signaled, "\(outcome.summary)")
      #expect(startedPids().count == 3)
      #expect(CLI.lines(outcome.standardOutput) == ["\"run\"", "\"again\"", "\"exit\""])
    }
  }

  @Test func restartPassesOnADeathBySignal() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      try CLI.write("1\n", to: file)
      let outcome = try CLI.run(["watch", file, "--restart", "--", "sh", "-c", "kill -KILL $$"], deadline: .seconds(10))
      #expect(outcome.status == 128 + SIGKILL && !outcome.signaled, "\(outcome.summary)")
    }
  }

  /// A command that cannot be run ends the watch with 127 (126 when not executable), also
  /// with --count, which ended it with 0 before.
  @Test(arguments: ["--exec", "--restart"])
  func aCommandThatCannotRunEndsTheWatchWith127EvenWithCount(mode: String) throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      try CLI.write("{\"a\": 1}\n", to: file)
      let outcome = try CLI.run(["watch", "--count", "1", file, "a", mode, "--", directory.file("no-such-command")], deadline: .seconds(10))
      #expect(outcome.status == 127, "\(outcome.summary)")
    }
  }

  /// `watch -- -dash.json a`: after `--`, FILE may start with a dash; a second `--` starts
  /// the command.
  @Test func aFileStartingWithADashFollowsDoubleDash() throws {
    try withTemporaryDirectory { directory in
      try CLI.write("{\"a\": 1}\n", to: directory.file("-dash.json"))
      let plain = try ChildProcess.run(
        "/bin/sh", ["-c", "cd \"$0\" && exec \"$1\" watch --count 1 -- -dash.json a", directory.path, CLI.executable()],
        deadline: .seconds(10))
      #expect(plain.status == 0 && plain.standardOutput == "1\n", "\(plain.summary)")
      let exec = try ChildProcess.run(
        "/bin/sh", ["-c", "cd \"$0\" && exec \"$1\" watch --count 1 -- -dash.json a --exec -- cat", directory.path, CLI.executable()],
        deadline: .seconds(10))
      #expect(exec.status == 64, "--exec after the second -- is the command's: \(exec.summary)")
    }
  }

  /// `nohup ccsync watch`: SIGHUP, ignored at start, does not end the watch.
  @Test func aSignalIgnoredAtStartDoesNotEndTheWatch() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      try CLI.write("{\"a\": 1}\n", to: file)
      let watch = try ChildProcess.start("/bin/sh", ["-c", "trap '' HUP; exec \"$0\" watch \"$1\" a", CLI.executable(), file])
      #expect(waitUntil { watch.standardOutput == "1\n" })
      kill(watch.process.processIdentifier, SIGHUP)
      try CLI.write("{\"a\": 2}\n", to: file)
      #expect(waitUntil { watch.standardOutput == "1\n2\n" }, "the watch ended on SIGHUP: \(watch.standardOutput)")
      kill(watch.process.processIdentifier, SIGTERM)
      let outcome = watch.wait(deadline: .seconds(10))
      #expect(outcome.status == 0, "\(outcome.summary)")
    }
  }

  /// A value too large for the environment (Linux refuses one string over 128 KiB) still runs
  /// the command, with the value on standard input and `CCSYNC_VALUE` unset; before, the
  /// command "could not be run" (E2BIG) and the watch ended with 126.
  @Test func aValueTooLargeForTheEnvironmentGoesOnStandardInputOnly() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("big.json")
      let large = String(repeating: "x", count: 140_000)
      try CLI.write("{\"a\": \"\(large)\"}\n", to: file)
      let outcome = try CLI.run(
        ["watch", "--count", "1", file, "a", "--exec", "--", "sh", "-c", "echo \"${CCSYNC_VALUE-unset}\"; wc -c"],
        deadline: .seconds(10))
      #expect(outcome.status == 0, "\(outcome.summary)")
      #expect(CLI.lines(outcome.standardOutput).suffix(2).map { $0.trimmingCharacters(in: .whitespaces) } == ["unset", "\(large.utf8.count + 3)"],
              "\(outcome.standardOutput.suffix(200))")
    }
  }

  /// `--restart` stops the whole process group of the command: what it started and that
  /// ignores SIGTERM gets SIGKILL after 5 s like the command itself, both when a new value
  /// restarts it and when the watch ends; before, it was left running once the command had
  /// exited.
  @Test func restartKillsWhatTheCommandStartedThatIgnoresSigterm() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("w.json")
      let pids = directory.file("pids")
      let script = directory.file("run.sh")
      try CLI.write("{\"a\": 1}\n", to: file)
      try CLI.write("(trap '' TERM; exec sleep 300) &\necho $! >> '\(pids)'\nwait\n", to: script)
      let watch = try CLI.start(["watch", file, "a", "--restart", "--", "sh", script])
      #expect(waitUntil { processIDs(in: pids).count == 1 })
      try CLI.write("{\"a\": 2}\n", to: file)
      #expect(waitUntil { processIDs(in: pids).count == 2 }, "not restarted")
      let first = processIDs(in: pids)[0]
      #expect(waitUntil(deadline: .seconds(15)) { !isRunning(first) }, "what the first run started outlived its SIGKILL time")
      kill(watch.process.processIdentifier, SIGINT)
      let outcome = watch.wait(deadline: .seconds(15))
      #expect(outcome.status == 0, "\(outcome.summary)")
      let second = processIDs(in: pids)[1]
      #expect(waitUntil { !isRunning(second) }, "what the last run started outlived the watch")
    }
  }

  /// However the watch ends, the command's process group is stopped: when a reader of its
  /// standard output that went away ends it by SIGPIPE (141), when standard output cannot be
  /// written (74), and on SIGQUIT (which still ends it by SIGQUIT). Before, each of these
  /// ended `ccsync` at once, and the command ran on.
  @Test(arguments: ["reader gone", "write error", "SIGQUIT"])
  func everyEndingOfTheWatchStopsTheCommand(ending: String) throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("w.json")
      let pids = directory.file("pids")
      let fifo = directory.file("stdout")
      #expect(mkfifo(fifo, 0o600) == 0)
      // The test reads the FIFO; opened first, without blocking, so the watch can open it.
      let reader = open(fifo, O_RDONLY | O_NONBLOCK)
      #expect(reader >= 0)
      defer { if ending != "reader gone" { close(reader) } }
      // "write error": standard output is /dev/full, and the file missing until the command runs.
      let output = ending == "write error" ? "/dev/full" : fifo
      if ending != "write error" { try CLI.write("{\"a\": 1}\n", to: file) }
      let watch = try ChildProcess.start("/bin/sh", [
        "-c", "ulimit -c 0; exec \"$0\" watch \"$1\" a --restart -- sh -c \"$2\" > \"$3\"",
        try CLI.executable(), file, "echo $$ >> '\(pids)'; exec sleep 45", output,
      ])
      #expect(waitUntil { processIDs(in: pids).count == 1 }, "\(watch.standardError)")
      let command = try #require(processIDs(in: pids).first)
      switch ending {
      case "reader gone":
        var received: [UInt8] = []
        #expect(waitUntil {
          var buffer = [UInt8](repeating: 0, count: 64)
          let count = read(reader, &buffer, buffer.count)
          if count > 0 { received += buffer[..<count] }
          return received == Array("1\n".utf8)
        })
        close(reader)
        try CLI.write("{\"a\": 2}\n", to: file)
      case "write error":
        try CLI.write("{\"a\": 1}\n", to: file)
      default:
        kill(watch.process.processIdentifier, SIGQUIT)
      }
      #expect(waitForExit(of: watch))
      #expect(waitUntil { !isRunning(command) }, "the command outlived the watch")
      let outcome = watch.wait(afterKilling: [command])
      switch ending {
      case "reader gone":
        #expect(outcome.signaled && outcome.status == SIGPIPE, "\(outcome.summary)")
      case "write error":
        #expect(outcome.status == 74 && !outcome.signaled, "\(outcome.summary)")
        #expect(outcome.standardError.contains("write error on standard output: No space left on device"), "\(outcome.summary)")
      default:
        #expect(outcome.signaled && outcome.status == SIGQUIT, "\(outcome.summary)")
      }
    }
  }

  /// A `--restart` watch that ends because the command exited on its own still kills what
  /// an earlier, stopped run started and that ignores SIGTERM, at once; before, that ending
  /// skipped the shutdown and it ran on.
  @Test func restartEndingByTheCommandsOwnExitKillsWhatEarlierRunsLeft() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("w.json")
      let pids = directory.file("pids")
      let script = directory.file("run.sh")
      try CLI.write("{\"mode\": \"run\"}\n", to: file)
      try CLI.write("""
        [ "$CCSYNC_VALUE" = '"exit"' ] && exit 5
        sh -c "trap '' TERM; echo \\$$ >> '\(pids)'; exec sleep 300" &
        wait

        """, to: script)
      let watch = try CLI.start(["watch", file, "mode", "--restart", "--", "sh", script])
      #expect(waitUntil { processIDs(in: pids).count == 1 })
      try CLI.write("{\"mode\": \"exit\"}\n", to: file)
      #expect(waitForExit(of: watch))
      let first = try #require(processIDs(in: pids).first)
      // At once, not after the 5 s a stopped run gets before its SIGKILL.
      #expect(waitUntil(deadline: .seconds(3)) { !isRunning(first) }, "what the first run started outlived the watch")
      let outcome = watch.wait(afterKilling: processIDs(in: pids))
      #expect(outcome.status == 5 && !outcome.signaled, "\(outcome.summary)")
    }
  }
}

extension ChildProcess {
  /// Kills `leftovers` (what a failing watch left running, holding the descriptor Foundation
  /// watches), then waits for this process.
  func wait(afterKilling leftovers: [Int32]) -> Outcome {
    for pid in leftovers { kill(pid, SIGKILL) }
    return wait(deadline: .seconds(10))
  }
}
