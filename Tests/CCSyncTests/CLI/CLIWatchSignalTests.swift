import Foundation
import Testing
@testable import CCSync

/// `ccsync watch --signal SIG` (a reload signal instead of a restart) and `--debounce SECS`
/// (one action per burst of writes), for services that reload on a signal.
@Suite struct CLIWatchSignalTests {
  /// The lines of `file` (empty while it does not exist).
  private func lines(of file: String) -> [String] {
    CLI.lines((try? String(contentsOfFile: file, encoding: .utf8)) ?? "")
  }

  /// Waits until `watch`, started by the test, has exited (or is a zombie); see
  /// CLIWatchTests for why not with `ChildProcess.wait`.
  private func waitForExit(of watch: ChildProcess) -> Bool {
    waitUntil(deadline: .seconds(15)) {
      kill(watch.process.processIdentifier, 0) != 0
        || (try? String(contentsOfFile: "/proc/\(watch.process.processIdentifier)/stat", encoding: .utf8))?.contains(") Z ") == true
    }
  }

  /// A shell script that counts the signals `trapName` it gets in `log` (`signal N`), after
  /// logging its PID and starting value (`start PID VALUE`); it exits 7 at the `exitAfter`th.
  /// Waiting in `wait`, not `sleep`, so that the trap runs as soon as a signal arrives.
  private func countingScript(trapName: String, log: String, exitAfter: Int = 0) -> String {
    """
    n=0
    trap 'n=$((n+1)); echo "signal $n" >> \(log); [ $n -eq \(exitAfter) ] && exit 7' \(trapName)
    echo "start $$ $CCSYNC_VALUE" >> '\(log)'
    while :; do sleep 0.05 & wait $!; done
    """
  }

  /// `--signal` starts the command once and sends it the signal on each new value: it is
  /// never restarted (one start, one PID), and its own exit ends the watch with its status.
  @Test(arguments: [("HUP", "HUP"), ("SIGUSR1", "USR1"), ("12", "USR2"), ("hup", "HUP")])
  func signalIsDeliveredToTheRunningCommandInsteadOfARestart(option: String, trapName: String) throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      let log = directory.file("log")
      try CLI.write("{\"a\": 1}\n", to: file)
      let script = countingScript(trapName: trapName, log: log, exitAfter: 3)
      let watch = try CLI.start(["watch", file, "a", "--signal", option, "--", "sh", "-c", script])
      #expect(waitUntil { lines(of: log).count == 1 }, "\(watch.standardError)")
      let start = try #require(lines(of: log).first)
      #expect(start.hasPrefix("start ") && start.hasSuffix(" 1"), "\(start)")
      let pid = try #require(Int32(start.split(separator: " ")[1]))

      for value in 2...3 {
        #expect(try CLI.run(["set", file, "a", String(value)]).status == 0)
        #expect(waitUntil { lines(of: log).last == "signal \(value - 1)" }, "\(lines(of: log))")
        #expect(kill(pid, 0) == 0, "the command is still the one started first")
      }
      // The third signal makes it exit 7, which ends the watch with 7.
      #expect(try CLI.run(["set", file, "a", "4"]).status == 0)
      let outcome = watch.wait(deadline: .seconds(15))
      #expect(outcome.status == 7 && !outcome.signaled, "\(outcome.summary)")
      #expect(lines(of: log) == [start, "signal 1", "signal 2", "signal 3"], "never restarted")
      #expect(CLI.lines(outcome.standardOutput) == ["1", "2", "3", "4"])
    }
  }

  /// However the watch ends, a `--signal` command is stopped as `--restart`'s is (SIGTERM to
  /// its process group).
  @Test func endingTheWatchStopsTheSignalledCommand() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      let log = directory.file("log")
      try CLI.write("{\"a\": 1}\n", to: file)
      let watch = try CLI.start(["watch", file, "a", "--signal", "HUP", "--", "sh", "-c", countingScript(trapName: "HUP", log: log)])
      #expect(waitUntil { lines(of: log).count == 1 })
      let pid = try #require(lines(of: log).first.flatMap { Int32($0.split(separator: " ")[1]) })
      kill(watch.process.processIdentifier, SIGTERM)
      #expect(waitForExit(of: watch))
      #expect(waitUntil { kill(pid, 0) != 0 }, "the command outlived the watch")
      let outcome = watch.wait(afterKilling: [pid])
      #expect(outcome.status == 0 && !outcome.signaled, "\(outcome.summary)")
    }
  }

  @Test func badSignalsAndDebounceWithoutACommandAreUsageErrors() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      try CLI.write("{\"a\": 1}\n", to: file)
      for name in ["FOO", "0", "65", "SIG"] {
        expectUsageError(try CLI.run(["watch", file, "--signal", name, "--", "true"]), command: "watch", token: name)
      }
      expectUsageError(try CLI.run(["watch", file, "--signal", "HUP", "--restart", "--", "true"]), command: "watch", token: "--restart")
      expectUsageError(try CLI.run(["watch", file, "--signal", "HUP"]), command: "watch", token: "<command>")
      expectUsageError(try CLI.run(["watch", file, "--debounce", "0.2"]), command: "watch", token: "--debounce")
      expectUsageError(try CLI.run(["watch", file, "--debounce=-1", "--", "true"]), command: "watch", token: "-1")
    }
  }

  /// `--debounce 0.2`: ten writes 10 ms apart make one action, with the last value, for
  /// each of `--exec` (one run), `--restart` (one restart) and `--signal` (one signal). The
  /// value found at start is acted on at once; lines are printed at once.
  @Test(arguments: ["--exec", "--restart", "--signal"])
  func debounceTurnsABurstOfWritesIntoOneAction(mode: String) throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      let log = directory.file("log")
      let script = directory.file("run.sh")
      try CLI.write("{\"n\": 0}\n", to: file)
      // Each run or start logs its value; each signal logs the value the file holds then.
      switch mode {
      case "--exec":
        try CLI.write("echo \"run $CCSYNC_VALUE\" >> '\(log)'\n", to: script)
      case "--restart":
        try CLI.write("echo \"run $CCSYNC_VALUE\" >> '\(log)'\nexec sleep 30\n", to: script)
      default:
        try CLI.write("""
          trap 'echo "signal $(tr -d " \\n" < "$CCSYNC_FILE")" >> \(log)' HUP
          echo "run $CCSYNC_VALUE" >> '\(log)'
          while :; do sleep 0.05 & wait $!; done

          """, to: script)
      }
      let modeArguments = mode == "--signal" ? ["--signal", "HUP"] : [mode]
      let watch = try CLI.start(["watch", file, "n", "--debounce", "0.2"] + modeArguments + ["--", "sh", script])
      #expect(waitUntil { lines(of: log) == ["run 0"] }, "not acted on at start: \(lines(of: log)) \(watch.standardError)")

      // The burst: atomic replacements from this process, 10 ms apart.
      let document = SharedDocument(path: file, durable: false)
      let clock = ContinuousClock()
      var gaps: [Duration] = []
      var last = clock.now
      func write(_ value: Int) throws {
        try document.update { $0 = ["n": .number(JSONNumber(value))] }
      }
      for value in 1...10 {
        usleep(10_000)
        try write(value)
        gaps.append(clock.now - last)
        last = clock.now
      }
      #expect(waitUntil { lines(of: log).count >= 2 }, "no action after the burst: \(watch.standardError)")
      // A last write once the burst's action is seen: any second action the burst caused
      // shows in the log before this one's.
      try write(99)
      let action: (Int) -> String = { mode == "--signal" ? "signal {\"n\":\($0)}" : "run \($0)" }
      #expect(waitUntil { lines(of: log).contains(action(99)) }, "\(lines(of: log))")
      #expect(lines(of: log) == ["run 0", action(10), action(99)], "write gaps \(gaps)")

      kill(watch.process.processIdentifier, SIGTERM)
      #expect(waitForExit(of: watch))
      let outcome = watch.wait(afterKilling: [])
      #expect(outcome.status == 0, "\(outcome.summary)")
      let printed = CLI.lines(outcome.standardOutput)
      #expect(printed.first == "0" && printed.contains("10") && printed.last == "99", "\(printed)")
    }
  }

  /// A value that never stops changing is still acted on: at the latest 4 x SECS after the
  /// first change not acted on (consul-template's `wait` maximum).
  @Test func debounceActsAtTheLatestAfterFourPeriodsOfContinuousChange() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      let log = directory.file("log")
      try CLI.write("{\"n\": 0}\n", to: file)
      let watch = try CLI.start([
        "watch", file, "n", "--debounce", "0.1", "--exec", "--", "sh", "-c", "echo \"$CCSYNC_VALUE\" >> '\(log)'",
      ])
      #expect(waitUntil { lines(of: log) == ["0"] })
      // Writes every 20 ms for about 1.2 s: never quiet for 0.1 s, so only the 0.4 s bound acts.
      let document = SharedDocument(path: file, durable: false)
      for value in 1...60 {
        usleep(20_000)
        try document.update { $0 = ["n": .number(JSONNumber(value))] }
      }
      #expect(waitUntil { lines(of: log).last == "60" }, "\(lines(of: log))")
      let during = lines(of: log).dropFirst().dropLast()
      #expect(!during.isEmpty, "nothing ran while the value kept changing: \(lines(of: log))")
      kill(watch.process.processIdentifier, SIGTERM)
      #expect(waitForExit(of: watch))
      #expect(watch.wait(afterKilling: []).status == 0)
    }
  }

  /// `--debounce` with `--count`: the watch reads the file no more after the Nth value, so a
  /// run still waiting for its quiet period runs at once, and the watch ends after it.
  @Test func debounceWithCountRunsTheLastValueAtOnce() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      let log = directory.file("log")
      try CLI.write("{\"n\": 0}\n", to: file)
      let watch = try CLI.start([
        "watch", "--count", "2", "--debounce", "30", file, "n", "--", "sh", "-c", "echo \"$CCSYNC_VALUE\" >> '\(log)'",
      ])
      #expect(waitUntil { lines(of: log) == ["0"] })
      #expect(try CLI.run(["set", file, "n", "1"]).status == 0)
      let outcome = watch.wait(deadline: .seconds(10))
      #expect(outcome.status == 0 && !outcome.timedOut, "\(outcome.summary)")
      #expect(lines(of: log) == ["0", "1"])
    }
  }
}
