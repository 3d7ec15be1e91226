import Foundation
import Testing

/// `ccsync edit` (with scripts as the editor), `ccsync stress` and `ccsync demo`.
@Suite struct CLIEditStressDemoTests {
  /// Writes an executable shell script `name` into `directory` and returns its path.
  private func script(_ body: String, named name: String, in directory: TemporaryDirectory) throws -> String {
    let path = directory.file(name)
    try CLI.write("#!/bin/sh\n" + body + "\n", to: path)
    #expect(chmod(path, 0o755) == 0)
    return path
  }

  @Test func editMergesWithChangesMadeMeanwhile() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      try CLI.write("{\n  \"theme\": \"light\",\n  \"size\": 13,\n  \"ratio\": 1.50\n}\n", to: file)
      let ccsync = try CLI.executable()
      // The editor changes theme in the copy; meanwhile another process changes size.
      let editor = try script(
        "sed -i 's/light/dark/' \"$1\" && '\(ccsync)' set '\(file)' size 20", named: "editor", in: directory)
      let outcome = try CLI.run(["edit", file], environment: CLI.environment(["EDITOR": editor, "VISUAL": ""]))
      #expect(outcome.status == 0, "\(outcome.summary)")
      #expect(try String(contentsOfFile: file, encoding: .utf8) == "{\n  \"theme\": \"dark\",\n  \"size\": 20,\n  \"ratio\": 1.50\n}\n")
    }
  }

  @Test func editConflictExits75AndWritesNothing() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      try CLI.write("{\"port\": 8080, \"host\": \"a\"}\n", to: file)
      let ccsync = try CLI.executable()
      let editor = try script(
        "sed -i 's/8080/9090/; s/\"a\"/\"b\"/' \"$1\" && '\(ccsync)' set '\(file)' port 9091", named: "editor", in: directory)
      let before = try #require(CLI.bytes(file)).count
      let outcome = try CLI.run(["edit", file], environment: CLI.environment(["VISUAL": editor]))
      #expect(outcome.status == 75, "\(outcome.summary)")
      #expect(outcome.standardError.contains("port: edited 9090, file now 9091 (was 8080)"), "\(outcome.summary)")
      #expect(outcome.standardError.contains("nothing written"))
      // The file has the other process's write and nothing of the edit.
      #expect(try CLI.run(["get", "-c", file]).standardOutput == "{\"port\":9091,\"host\":\"a\"}\n")
      #expect(before > 0)
      let kept = try #require(outcome.standardError.components(separatedBy: "kept at ").last?
        .trimmingCharacters(in: .whitespacesAndNewlines))
      #expect(FileManager.default.fileExists(atPath: kept))
      try? FileManager.default.removeItem(atPath: (kept as NSString).deletingLastPathComponent)
    }
  }

  @Test func editInvalidOrUnchanged() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      try CLI.write("{\"a\": 1}\n", to: file)
      let before = CLI.bytes(file)

      let unchanged = try CLI.run(["edit", file], environment: CLI.environment(["EDITOR": "true", "VISUAL": ""]))
      #expect(unchanged.status == 0 && unchanged.standardOutput == "", "\(unchanged.summary)")
      let spaces = try script("printf '{ \"a\" : 1 }' > \"$1\"", named: "spaces", in: directory)
      let reformatted = try CLI.run(["edit", file], environment: CLI.environment(["EDITOR": spaces, "VISUAL": ""]))
      #expect(reformatted.status == 0, "\(reformatted.summary)")
      // A change of layout alone is the person's: written as it is.
      #expect(CLI.bytes(file) == Data("{ \"a\" : 1 }".utf8))
      try CLI.write("{\"a\": 1}\n", to: file)

      let breaker = try script("printf '{\\n  \"a\": x\\n}' > \"$1\"", named: "breaker", in: directory)
      let invalid = try CLI.run(["edit", file], environment: CLI.environment(["EDITOR": breaker, "VISUAL": ""]))
      #expect(invalid.status == 65, "\(invalid.summary)")
      #expect(invalid.standardError.contains("is not valid JSON: unexpected character 'x' at line 2, column 8"))
      #expect(CLI.bytes(file) == before)
      let kept = try #require(invalid.standardError.components(separatedBy: "kept at ").last?
        .trimmingCharacters(in: .whitespacesAndNewlines))
      #expect(try String(contentsOfFile: kept, encoding: .utf8) == "{\n  \"a\": x\n}")
      try? FileManager.default.removeItem(atPath: (kept as NSString).deletingLastPathComponent)

      let failing = try CLI.run(["edit", file], environment: CLI.environment(["EDITOR": "exit 3; :", "VISUAL": ""]))
      #expect(failing.status == 3, "\(failing.summary)")
      #expect(CLI.bytes(file) == before)
      let missing = try CLI.run(["edit", directory.file("none.json")], environment: CLI.environment(["EDITOR": "true"]))
      #expect(missing.status == 66, "\(missing.summary)")
    }
  }

  /// A copy that cannot be made ($TMPDIR missing) is 73, cannot create, not 66, which
  /// means FILE is missing; the file is untouched.
  @Test func editWithoutATemporaryDirectoryCannotCreate() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      try CLI.write("{\"a\": 1}\n", to: file)
      let outcome = try CLI.run(["edit", file], environment: CLI.environment(["EDITOR": "true", "VISUAL": "", "TMPDIR": directory.file("missing")]))
      #expect(outcome.status == 73 && outcome.standardError.contains("cannot make the copy to edit"), "\(outcome.summary)")
      #expect(CLI.bytes(file) == Data("{\"a\": 1}\n".utf8))
    }
  }

  /// A copy that cannot be written for a lack of space or an I/O error (EDQUOT and EIO
  /// injected into its first write) is 74, an I/O error, like ENOSPC; the file is untouched,
  /// and the half-made copy and its directory are removed.
  @Test(arguments: ["EDQUOT", "EIO"]) func editCopyWriteFailureIsAnIOError(errno: String) throws {
    let strace = try FaultTools.strace()
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      try CLI.write("{\"a\": 1}\n", to: file)
      let temporary = directory.file("tmp")
      #expect(mkdir(temporary, 0o700) == 0)
      let outcome = try ChildProcess.run(
        strace, ["-f", "-qq", "-o", "/dev/null", "-e", "trace=write", "-e", "inject=write:error=\(errno):when=1",
                 try CLI.executable(), "edit", file],
        environment: CLI.environment(["EDITOR": "true", "VISUAL": "", "TMPDIR": temporary]))
      #expect(outcome.status == 74 && outcome.standardError.contains("cannot make the copy to edit"), "\(outcome.summary)")
      #expect(CLI.bytes(file) == Data("{\"a\": 1}\n".utf8))
      #expect(try FileManager.default.contentsOfDirectory(atPath: temporary) == [])
    }
  }

  /// `ccsync edit` started with SIGINT and SIGQUIT ignored (a shell's background job) keeps
  /// them ignored after the editor: a Ctrl-C meant for the foreground, arriving while the edit
  /// waits for the lock, does not end it, and the edit is written once the lock is free.
  @Test func editKeepsSignalsIgnoredAtStartIgnored() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      try CLI.write("{\"theme\": \"light\"}\n", to: file)
      let editor = try script("sed -i 's/light/dark/' \"$1\"", named: "editor", in: directory)
      let holder = try FlockHolder(lockFile: file + ".lock", in: directory)
      let edit = try ChildProcess.start(
        "/bin/sh", ["-c", "trap '' INT QUIT; exec \"$0\" edit \"$1\"", try CLI.executable(), file],
        environment: CLI.environment(["EDITOR": editor, "VISUAL": ""]))
      let pid = edit.process.processIdentifier
      #expect(waitUntil { blockedFlockWaiters().contains(pid) }, "the edit never waited for the lock")
      // The editor has run; both signals are still ignored (bits SIG - 1 of SigIgn).
      let ignored = try #require(signalMask("SigIgn", of: pid))
      #expect(ignored & (1 << (SIGINT - 1)) != 0 && ignored & (1 << (SIGQUIT - 1)) != 0, "SigIgn \(String(ignored, radix: 16))")
      kill(pid, SIGINT)
      kill(pid, SIGQUIT)
      holder.stop()
      let outcome = edit.wait(deadline: .seconds(30))
      #expect(outcome.succeeded, "\(outcome.summary)")
      #expect(try String(contentsOfFile: file, encoding: .utf8) == "{\"theme\": \"dark\"}\n", "the file's own layout kept")
    }
  }

  /// `ccsync edit` and `ccsync stress` started with SIGCHLD ignored (`env --ignore-signal=CHLD`)
  /// still wait for their children: ignored, the kernel reaped them itself, every `waitpid`
  /// failed with ECHILD, and edit reported "the editor exited with status 74" and deleted the
  /// edited copy. The editor itself gets SIGCHLD at its default action.
  @Test func editAndStressStartedWithSigchldIgnoredWaitForTheirChildren() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      let editorStatus = directory.file("editor-status")
      try CLI.write("{\"theme\": \"light\"}\n", to: file)
      let editor = try script(
        "cat /proc/$$/status > '\(editorStatus)'; sed -i 's/light/dark/' \"$1\"", named: "editor", in: directory)
      let ignoringChildren = ["--ignore-signal=CHLD", try CLI.executable()]
      let edit = try ChildProcess.run(
        "env", ignoringChildren + ["edit", file], environment: CLI.environment(["EDITOR": editor, "VISUAL": ""]))
      #expect(edit.succeeded, "\(edit.summary)")
      #expect(try String(contentsOfFile: file, encoding: .utf8) == "{\"theme\": \"dark\"}\n", "the file's own layout kept")
      let editorIgnored = signalMask("SigIgn", in: try String(contentsOfFile: editorStatus, encoding: .utf8))
      #expect(editorIgnored.map { $0 & (1 << (SIGCHLD - 1)) == 0 } == true, "the editor got SIGCHLD ignored")

      let stress = try ChildProcess.run("env", ignoringChildren + ["stress", "--processes", "2", "--iterations", "5", file])
      #expect(stress.succeeded, "\(stress.summary)")
      #expect(try CLI.run(["get", file, "counter"]).standardOutput == "10\n")
    }
  }

  /// When waiting for the editor fails (ECHILD injected into `ccsync`'s own `wait4`), the
  /// editor's status is unknown and the user's edit may be in the copy: 74, the file
  /// untouched, the edited copy kept and named. Before, the copy was removed.
  @Test func editKeepsTheCopyWhenWaitingForTheEditorFails() throws {
    let strace = try FaultTools.strace()
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      try CLI.write("{\"theme\": \"light\"}\n", to: file)
      let editor = try script("sed -i 's/light/dark/' \"$1\"", named: "editor", in: directory)
      // Without -f only ccsync is traced, not the editor's shell, which waits for sed.
      let outcome = try ChildProcess.run(
        strace, ["-qq", "-o", "/dev/null", "-e", "trace=wait4", "-e", "inject=wait4:error=ECHILD", try CLI.executable(), "edit", file],
        environment: CLI.environment(["EDITOR": editor, "VISUAL": ""]))
      #expect(outcome.status == 74 && outcome.standardError.contains("cannot wait for the editor"), "\(outcome.summary)")
      #expect(CLI.bytes(file) == Data("{\"theme\": \"light\"}\n".utf8))
      let kept = try #require(outcome.standardError.components(separatedBy: "kept at ").dropFirst().last?
        .trimmingCharacters(in: .whitespacesAndNewlines), "\(outcome.summary)")
      defer { try? FileManager.default.removeItem(atPath: (kept as NSString).deletingLastPathComponent) }
      // The editor was not waited for: its edit lands in the kept copy when it is done.
      #expect(waitUntil { (try? String(contentsOfFile: kept, encoding: .utf8)) == "{\"theme\": \"dark\"}\n" })
    }
  }

  @Test func stressLosesNoUpdates() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      try CLI.write("{\"counter\": 7, \"keep\": \"me\"}\n", to: file)
      let outcome = try CLI.run(["stress", "--processes", "4", "--iterations", "50", file], deadline: .seconds(60))
      #expect(outcome.status == 0, "\(outcome.summary)")
      let lines = CLI.lines(outcome.standardOutput)
      #expect(lines.first == "processes: 4")
      #expect(lines.contains("iterations: 50"))
      #expect(lines.contains { $0.hasPrefix("seconds: ") })
      #expect(lines.contains { $0.hasPrefix("updates per second: ") })
      #expect(lines.count > 5 && lines[4] == "lost updates: 0", "\(lines)")
      #expect(try CLI.run(["get", "-c", file]).standardOutput == "{\"counter\":207,\"keep\":\"me\"}\n")

      let nested = try CLI.run(["stress", "--processes", "2", "--iterations", "10", "--path", "a.b", file])
      #expect(nested.status == 0, "\(nested.summary)")
      #expect(try CLI.run(["get", file, "a.b"]).standardOutput == "20\n")

      let notInteger = try CLI.run(["stress", "--path", "keep", file])
      #expect(notInteger.status == 65, "\(notInteger.summary)")
    }
  }

  @Test func demoRunsOnItsOwnAndEndsWithTheStressResult() throws {
    let clock = ContinuousClock()
    let start = clock.now
    let outcome = try CLI.run(["demo"], deadline: .seconds(30))
    #expect(outcome.status == 0, "\(outcome.summary)")
    #expect(clock.now - start < .seconds(30))
    #expect(outcome.standardOutput.contains("lost updates: 0"))
    #expect(outcome.standardOutput.contains("all 4 changes are in the file"))
    #expect(outcome.standardError == "")
  }
}

@testable import CCSyncCLI

extension CLIEditStressDemoTests {
  @Test func embeddedDemoDocumentValueIsConfigExample() throws {
    #expect(DemoDocument.text == (try String(contentsOf: CLI.exampleURL, encoding: .utf8)))
  }
}

/// One of the signal masks in /proc/PID/status (`SigIgn`, `SigBlk`, `SigCgt`), or `nil`.
func signalMask(_ name: String, of pid: Int32) -> UInt64? {
  signalMask(name, in: (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? "")
}

/// One of the signal masks in the text of a /proc/PID/status file, or `nil`.
func signalMask(_ name: String, in status: String) -> UInt64? {
  guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }) else { return nil }
  return UInt64(line.dropFirst(name.count + 1).trimmingCharacters(in: .whitespaces), radix: 16)
}
