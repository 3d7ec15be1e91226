import Foundation
import Testing
@testable import CCSync
@testable import CCSyncEtcd
import CCSyncJSON
import CCSyncSystem

extension EtcdTests {
  /// `ccsync mirror` as it is run: real etcd members on loopback, real mirror processes (the
  /// built `ccsync`), directories standing for machines (docs/SEMANTICS.md, "Mirror"). Every
  /// test waits for each mirror's `READY=1` before it acts and with deadlines after; the only
  /// fixed wait is the 10 s outage the issue asks for.
  @Suite struct Mirroring {
    /// Start rules, readiness, a write on one machine reaching the two others, a write to the
    /// key reaching every machine, and no echo: the key is written once per change.
    @Test func aWriteOnOneMachineReachesTheOthersAndNothingComesBack() throws {
      try withTemporaryDirectory { directory in
        let rig = try MirrorRig(in: directory)
        try CLI.write(#"{"name": "app", "port": 1}"# + "\n", to: rig.file(0))
        let first = try rig.startMirror(0)
        defer { first.terminate() }
        // READY=1 comes after the first sync, never before the sides agree.
        #expect(rig.keyValue() == ["name": "app", "port": 1], "only the file existed: the key is created from it")
        let others = try [1, 2].map { try rig.startMirror($0) }
        defer { for mirror in others { mirror.terminate() } }
        for index in [1, 2] {
          #expect(fileValue(rig.file(index)) == ["name": "app", "port": 1], "only the key existed: m\(index)'s file is created from it")
        }

        #expect(try CLI.run(["set", rig.file(1), "port", "2"]).succeeded)
        #expect(rig.waitUntilConverged([0, 1, 2]) { $0.integer("port") == 2 }, "\(rig.state([0, 1, 2]))")
        try rig.put(#"{"name": "app", "port": 2, "debug": true}"#)
        #expect(rig.waitUntilConverged([0, 1, 2]) { $0[field: "debug"] == true }, "\(rig.state([0, 1, 2]))")
        #expect(try CLI.run(["set", rig.file(2), "name", "web"]).succeeded)
        #expect(rig.waitUntilConverged([0, 1, 2]) { $0[field: "name"] == "web" }, "\(rig.state([0, 1, 2]))")

        // Created by m0, m1's port, etcdctl's put, m2's name: four writes, none sent back.
        #expect(try rig.keyRecord()?.version == 4, "a mirror sent back what it received")
        for mirror in [first] + others {
          let outcome = mirror.terminate()
          #expect(outcome.succeeded, "SIGTERM ends a mirror with 0: \(outcome.summary)")
          #expect(outcome.standardError == "", "nothing to report in a quiet run")
          #expect(mirror.notifications.receive(deadline: .seconds(5)) == "STOPPING=1")
        }
        #expect(FileManager.default.fileExists(atPath: rig.machineDirectory(0) + "/.cfg.json.ccsync-mirror"), "the state file beside the file")
      }
    }

    /// A first run where both sides exist: the key wins and the file's version is kept beside
    /// it; `--prefer file` reverses that; several pairs in one process, one copied each way.
    @Test func aFirstRunTakesTheKeyAndKeepsTheFilesVersionBesideIt() throws {
      try withTemporaryDirectory { directory in
        let rig = try MirrorRig(in: directory)
        let machine = rig.machineDirectory(0)
        let (both, onlyFile, onlyKey, preferred) = (machine + "/both.json", machine + "/file.json", machine + "/key.json", machine + "/prefer.json")
        try CLI.write(#"{"from": "file", "size": 1}"# + "\n", to: both)
        try rig.put(#"{"from": "key", "size": 1}"#, key: "both")
        try CLI.write(#"{"only": "file"}"# + "\n", to: onlyFile)
        try rig.put(#"{"only": "key"}"#, key: "key")
        let mirror = try MirrorProcess(
          [both, rig.url("both"), onlyFile, rig.url("file"), onlyKey, rig.url("key")], in: directory)
        defer { mirror.terminate() }
        #expect(mirror.waitUntilReady(), "\(mirror.standardError)")
        #expect(fileValue(both) == ["from": "key", "size": 1])
        let copies = try FileManager.default.contentsOfDirectory(atPath: machine).filter { $0.hasPrefix("both.json.conflict-") }
        #expect(copies.count == 1, "\(copies)")
        #expect(copies.first.flatMap { fileValue(machine + "/" + $0) } == ["from": "file", "size": 1], "the file's version kept")
        #expect(mirror.errorLines(containing: "both.json.conflict-").count == 1, "\(mirror.standardError)")
        #expect(rig.keyValue("file") == ["only": "file"])
        #expect(fileValue(onlyKey) == ["only": "key"])

        try CLI.write(#"{"from": "file"}"# + "\n", to: preferred)
        try rig.put(#"{"from": "key"}"#, key: "prefer")
        let preferring = try MirrorProcess(["--prefer", "file", preferred, rig.url("prefer")], in: directory)
        defer { preferring.terminate() }
        #expect(preferring.waitUntilReady(), "\(preferring.standardError)")
        #expect(rig.keyValue("prefer") == ["from": "file"])
        #expect(fileValue(preferred) == ["from": "file"])
        let listed = try rig.cluster.etcdctl(["get", "--prefix", "--keys-only", "prefer.conflict-"])
        let keptKeys = CLI.lines(listed.standardOutput).filter { !$0.isEmpty }
        #expect(keptKeys.count == 1, "\(listed.summary)")
        #expect(keptKeys.first.flatMap { rig.keyValue($0) } == ["from": "key"], "the key's version kept")
      }
    }

    /// A restart merges each side's changes since the last agreed version; a field both
    /// changed takes the key's value, and a line names the field and the value that lost.
    @Test func aRestartMergesFieldByFieldAndNamesTheValueThatLost() throws {
      try withTemporaryDirectory { directory in
        let rig = try MirrorRig(in: directory)
        try CLI.write(#"{"x": 1, "y": 1, "z": 1}"# + "\n", to: rig.file(0))
        let before = try rig.startMirror(0)
        #expect(rig.keyValue() == ["x": 1, "y": 1, "z": 1])
        #expect(before.terminate().succeeded)

        #expect(try CLI.run(["set", rig.file(0), "x", "2"]).succeeded)
        #expect(try CLI.run(["set", rig.file(0), "y", "2"]).succeeded)
        try rig.put(#"{"x": 3, "y": 1, "z": 3}"#)
        let after = try rig.startMirror(0)
        defer { after.terminate() }
        #expect(rig.waitUntilConverged([0]) { $0 == ["x": 3, "y": 2, "z": 3] }, "\(rig.state([0]))")
        let lines = after.errorLines(containing: "changed on both sides")
        #expect(lines.count == 1 && lines.first?.contains("'x'") == true && lines.first?.contains("2 lost") == true, "\(after.standardError)")
        let names = try FileManager.default.contentsOfDirectory(atPath: rig.machineDirectory(0))
        #expect(!names.contains { $0.contains("conflict") }, "with history nothing is kept aside: \(names)")
      }
    }

    /// Three machines writing different fields at the same moment: every write survives,
    /// everywhere.
    @Test func writesToDifferentFieldsAtTheSameMomentAllSurvive() throws {
      try withTemporaryDirectory { directory in
        let rig = try MirrorRig(in: directory)
        let machines = [0, 1, 2]
        try CLI.write("{}\n", to: rig.file(0))
        let mirrors = try machines.map { try rig.startMirror($0) }
        defer { for mirror in mirrors { mirror.terminate() } }
        let writes = 20
        let go = Protected(false)
        let writers = machines.map { machine in
          let path = rig.file(machine)
          return BackgroundThread { () throws -> Void in
            let document = SharedDocument(path: path)
            while !go.withLock({ $0 }) { usleep(100) }
            for index in 0..<writes {
              try document.update { $0[field: "m\(machine)-\(index)"] = .number(JSONNumber(Int64(index))) }
            }
          }
        }
        go.withLock { $0 = true }
        for writer in writers { try writer.value(deadline: .seconds(30)) }
        let expected = machines.count * writes
        #expect(rig.waitUntilConverged(machines, deadline: .seconds(30)) { $0.objectValue?.count == expected }, "\(rig.state(machines))")
        for mirror in mirrors {
          #expect(mirror.errorLines(containing: "changed on both sides").isEmpty, "\(mirror.standardError)")
        }
      }
    }

    /// `kill -9` of a mirror in the middle of 500 local writes (three times), restarted each
    /// time, while the other machine writes too: every file ends equal to the key with every
    /// write in it, the local counter counts all 500 increments (a field reverted to an older
    /// value loses increments), and no version of the key ever held a smaller count.
    @Test func killNineInTheMiddleOfFiveHundredWritesLosesNothing() throws {
      try withTemporaryDirectory { directory in
        let rig = try MirrorRig(in: directory)
        try CLI.write(#"{"n": 0}"# + "\n", to: rig.file(0))
        var mirrorA = try rig.startMirror(0)
        defer { mirrorA.kill() }
        let mirrorB = try rig.startMirror(1)
        defer { mirrorB.terminate() }
        let (writesA, writesB) = (500, 100)
        let doneA = Protected(0)
        let writerA = BackgroundThread { [path = rig.file(0)] () throws -> Void in
          let document = SharedDocument(path: path)
          for index in 0..<writesA {
            try document.update { value in
              value[field: "n"] = .number(JSONNumber((value.integer("n") ?? -1_000_000) + 1))
              value[field: "a\(index)"] = .number(JSONNumber(Int64(index)))
            }
            doneA.withLock { $0 = index + 1 }
          }
        }
        let writerB = BackgroundThread { [path = rig.file(1)] () throws -> Void in
          let document = SharedDocument(path: path)
          for index in 0..<writesB {
            try document.update { $0[field: "b\(index)"] = .number(JSONNumber(Int64(index))) }
            usleep(2_000)
          }
        }
        var stderrA = ""
        for killAt in [120, 250, 380] {
          #expect(waitUntil(deadline: .seconds(60)) { doneA.withLock { $0 } >= killAt })
          mirrorA.kill()
          stderrA += mirrorA.standardError
          mirrorA = try rig.startMirror(0)
        }
        try writerA.value(deadline: .seconds(60))
        try writerB.value(deadline: .seconds(60))
        let complete: (JSONValue) -> Bool = { value in
          value.integer("n") == Int64(writesA)
            && (0..<writesA).allSatisfy { value.integer("a\($0)") == Int64($0) }
            && (0..<writesB).allSatisfy { value.integer("b\($0)") == Int64($0) }
        }
        #expect(rig.waitUntilConverged([0, 1], deadline: .seconds(30), complete), "\(rig.state([0, 1]))")
        stderrA += mirrorA.standardError
        #expect(!stderrA.contains("changed on both sides"), "no field changed on both sides, none may lose: \(stderrA)")
        #expect(!mirrorB.standardError.contains("changed on both sides"), "\(mirrorB.standardError)")

        // Every version the key went through: the counter never went down, and a field once
        // written never disappeared or changed.
        let versions = try keyHistory(rig)
        var count: Int64 = -1
        var seen: [String: JSONValue] = [:]
        var problems: [String] = []
        for (revision, value) in versions {
          let now = value.integer("n") ?? -1
          if now < count { problems.append("revision \(revision): n went from \(count) to \(now)") }
          count = max(count, now)
          for (name, earlier) in seen where value[field: name] != earlier {
            problems.append("revision \(revision): \(name) was \(earlier), now \(value[field: name].map { "\($0)" } ?? "gone")")
          }
          for member in value.objectValue ?? JSONObject() where member.key != "n" { seen[member.key] = member.value }
        }
        #expect(problems.isEmpty, "\(problems.prefix(10))")
        #expect(versions.count > 3, "the key's history was read")
      }
    }

    /// `kill -9` at exact points of a sync that writes both sides: strace kills the mirror at
    /// its first, second, third replacement (a rename: of the file or of the state file).
    /// After each, a local writer changes again what the crashed mirror had pushed (and what
    /// it had brought in, when it got that far), and a restarted mirror must push those newer
    /// values: none reverted to the version the key got from the crashed run.
    @Test func aKillAtEachReplacementOfASyncRevertsNothing() throws {
      let strace = try FaultTools.strace()
      try withTemporaryDirectory { directory in
        let rig = try MirrorRig(in: directory)
        var reached = 0
        for kill in 1...3 {
          let (file, key) = (rig.file(kill), "cfg\(kill)")
          try CLI.write(#"{"n": 1, "k": 1}"# + "\n", to: file)
          let first = try MirrorProcess([file, rig.url(key)], in: directory)
          #expect(first.waitUntilReady(), "\(first.standardError)")
          #expect(first.terminate().succeeded)
          // Offline, each side changes a field: the next sync writes both sides.
          #expect(try CLI.run(["set", file, "n", "2"]).succeeded)
          try rig.put(#"{"n": 1, "k": 2}"#, key: key)

          let traced = try ChildProcess.start(
            strace, ["-f", "-o", "/dev/null", "-e", "trace=rename", "-e", "inject=rename:signal=KILL:when=\(kill)",
                     try CLI.executable(), "mirror", file, rig.url(key)])
          let killed = waitUntil(deadline: .seconds(10)) { !traced.isRunning }
          if !killed {
            // Fewer replacements than `kill`: the sync finished; stop the mirror by its pid.
            if let pid = tracedChild(of: traced.process.processIdentifier) { Foundation.kill(pid, SIGTERM) }
            _ = traced.wait(deadline: .seconds(10))
            continue
          }
          reached += 1
          // The local writer, after the crash: it changes n again, and k when the file had
          // received the key's k = 2 (then its 3 is the newer value too).
          let received = fileValue(file)?.integer("k") == 2
          #expect(try CLI.run(["set", file, "n", "3"]).succeeded)
          if received { #expect(try CLI.run(["set", file, "k", "3"]).succeeded) }
          let expected: JSONValue = ["n": 3, "k": received ? 3 : 2]

          let restarted = try MirrorProcess([file, rig.url(key)], in: directory)
          defer { restarted.terminate() }
          #expect(restarted.waitUntilReady(), "\(restarted.standardError)")
          let converged = waitUntil(deadline: .seconds(20)) { fileValue(file) == expected && rig.keyValue(key) == expected }
          #expect(converged, "killed at replacement \(kill): file \(contents(file) ?? "-"), key \(rig.keyValue(key).map { "\($0)" } ?? "-")")
          #expect(restarted.errorLines(containing: "changed on both sides").isEmpty, "killed at replacement \(kill): \(restarted.standardError)")
        }
        #expect(reached >= 2, "the kills landed inside the sync")
      }
    }

    /// The cluster stopped for 10 s while both machines edit: each mirror says so once, the
    /// files keep their edits, and once the cluster is back every edit reaches the key and
    /// the other machine.
    @Test func aTenSecondOutageKeepsLocalEditsAndPushesThemAfter() throws {
      try withTemporaryDirectory { directory in
        let rig = try MirrorRig(in: directory)
        try rig.withMirrors([0, 1], startingFrom: #"{"v": 0}"#) { mirrors in
          let stopped = ContinuousClock.now
          try rig.cluster.stop(0)
          #expect(try CLI.run(["set", rig.file(0), "a1", "1"]).succeeded)
          #expect(try CLI.run(["set", rig.file(1), "b1", "1"]).succeeded)
          for mirror in mirrors {
            #expect(waitUntil(deadline: .seconds(10)) { !mirror.errorLines(containing: "cannot be reached").isEmpty }, "\(mirror.standardError)")
          }
          #expect(try CLI.run(["set", rig.file(0), "a2", "2"]).succeeded, "an edit after the mirror noticed")
          let tenSeconds = stopped + .seconds(10)
          while ContinuousClock.now < tenSeconds { usleep(50_000) }
          #expect(fileValue(rig.file(0)) == ["v": 0, "a1": 1, "a2": 2], "the file keeps its edits meanwhile")
          #expect(fileValue(rig.file(1)) == ["v": 0, "b1": 1])
          try rig.cluster.restart(0)

          #expect(rig.waitUntilConverged([0, 1]) { $0 == ["v": 0, "a1": 1, "a2": 2, "b1": 1] }, "\(rig.state([0, 1]))")
          for mirror in mirrors {
            #expect(mirror.errorLines(containing: "cannot be reached").count == 1, "said once: \(mirror.standardError)")
            #expect(waitUntil(deadline: .seconds(5)) { mirror.errorLines(containing: "in sync again").count == 1 }, "\(mirror.standardError)")
          }
        }
      }
    }

    /// Three members, the leader killed: a write on one machine still reaches the key and the
    /// other machine, through the members left, and so does a write to the key.
    @Test func theLeaderKilledChangesNothingForTheMachines() throws {
      try withTemporaryDirectory { directory in
        let rig = try MirrorRig(members: 3, in: directory)
        try rig.withMirrors([0, 1], startingFrom: #"{"v": 0}"#) { _ in
          try rig.cluster.kill(try rig.cluster.leaderIndex())
          #expect(try CLI.run(["set", rig.file(0), "v", "1"]).succeeded)
          #expect(rig.waitUntilConverged([0, 1]) { $0.integer("v") == 1 }, "\(rig.state([0, 1]))")
          try rig.put(#"{"v": 2}"#)
          #expect(rig.waitUntilConverged([0, 1]) { $0.integer("v") == 2 }, "\(rig.state([0, 1]))")
          #expect(try CLI.run(["set", rig.file(1), "w", "3"]).succeeded)
          #expect(rig.waitUntilConverged([0, 1]) { $0 == ["v": 2, "w": 3] }, "\(rig.state([0, 1]))")
        }
      }
    }

    /// An editor's save (a swap file renamed over the file) and `sed -i` (the same, by
    /// another program) are local writes like any other.
    @Test func anEditorsRenameAndSedInPlaceAreMirrored() throws {
      try withTemporaryDirectory { directory in
        let rig = try MirrorRig(in: directory)
        try rig.withMirrors([0, 1], startingFrom: #"{"mode": "a", "keep": true}"#) { mirrors in
          try shell(#"printf '{"mode": "b", "keep": true}\n' > .cfg.json.swp && mv .cfg.json.swp cfg.json"#, in: rig.machineDirectory(0))
          #expect(rig.waitUntilConverged([0, 1]) { $0[field: "mode"] == "b" }, "\(rig.state([0, 1]))")
          try shell(#"sed -i 's/"b"/"c"/' cfg.json"#, in: rig.machineDirectory(1))
          #expect(rig.waitUntilConverged([0, 1]) { $0 == ["mode": "c", "keep": true] }, "\(rig.state([0, 1]))")
          try shell(#"printf '{"mode": "d", "keep": true}\n' > cfg.json.tmp && mv cfg.json cfg.json~ && mv cfg.json.tmp cfg.json"#, in: rig.machineDirectory(0))
          #expect(rig.waitUntilConverged([0, 1]) { $0[field: "mode"] == "d" }, "a backup-then-rename save: \(rig.state([0, 1]))")
          for mirror in mirrors { #expect(mirror.standardError == "") }
        }
      }
    }

    /// An invalid file is reported and not mirrored: the key and the other machine keep the
    /// last valid version, the key's changes wait, and once the file is valid both merge.
    /// The same for an invalid value written to the key.
    @Test func anInvalidSideIsReportedAndSkippedUntilItIsValid() throws {
      try withTemporaryDirectory { directory in
        let rig = try MirrorRig(in: directory)
        try rig.withMirrors([0, 1], startingFrom: #"{"v": 1}"#) { mirrors in
          try CLI.write("{\"v\": 2,\n", to: rig.file(0))
          #expect(waitUntil { mirrors[0].errorLines(containing: "is not valid JSON").count == 1 }, "\(mirrors[0].standardError)")
          #expect(rig.keyValue() == ["v": 1], "the key keeps the last valid version")
          try rig.put(#"{"v": 1, "k": 1}"#)
          #expect(rig.waitUntilConverged([1]) { $0[field: "k"] == 1 })
          #expect(contents(rig.file(0)) == "{\"v\": 2,\n", "the invalid file is left alone")
          try CLI.write(#"{"v": 2, "f": 1}"# + "\n", to: rig.file(0))
          #expect(rig.waitUntilConverged([0, 1]) { $0 == ["v": 2, "k": 1, "f": 1] }, "\(rig.state([0, 1]))")

          try rig.put("not json")
          for mirror in mirrors {
            #expect(waitUntil { mirror.errorLines(containing: "is not valid JSON").contains { $0.contains("etcd://") } }, "\(mirror.standardError)")
          }
          #expect(fileValue(rig.file(1)) == ["v": 2, "k": 1, "f": 1], "the files keep the last valid version")
          #expect(try CLI.run(["set", rig.file(1), "g", "1"]).succeeded, "a local edit meanwhile")
          try rig.put(#"{"v": 3, "k": 1, "f": 1}"#)
          #expect(rig.waitUntilConverged([0, 1]) { $0 == ["v": 3, "k": 1, "f": 1, "g": 1] }, "\(rig.state([0, 1]))")
          #expect(mirrors[0].errorLines(containing: "is not valid JSON").count == 2, "each invalid version said once: \(mirrors[0].standardError)")
        }
      }
    }

    /// A file already invalid when its mirror starts (no event of it to come) is reported
    /// once, by the grace every follower gives a file (an empty one after 1 s), and mirrored
    /// once it is valid; the key keeps its version meanwhile.
    @Test func aFileInvalidWhenTheMirrorStartsIsReportedOnce() throws {
      try withTemporaryDirectory { directory in
        let rig = try MirrorRig(in: directory)
        try rig.withMirrors([0], startingFrom: #"{"v": 1}"#) { mirrors in _ = mirrors[0].terminate() }
        for (invalid, fixed) in [("{\"v\": 2,\n", 2), ("", 3)] {
          try CLI.write(invalid, to: rig.file(0))
          let mirror = try rig.startMirror(0)
          defer { mirror.terminate() }
          #expect(waitUntil { mirror.errorLines(containing: "is not valid JSON").count == 1 }, "'\(invalid)': \(mirror.standardError)")
          #expect(rig.keyValue() == ["v": .number(JSONNumber(Int64(fixed - 1)))], "the key keeps the last valid version")
          try CLI.write(#"{"v": \#(fixed)}"# + "\n", to: rig.file(0))
          #expect(rig.waitUntilConverged([0]) { $0.integer("v") == Int64(fixed) }, "\(rig.state([0]))")
          #expect(mirror.errorLines(containing: "is not valid JSON").count == 1, "said more than once: \(mirror.standardError)")
        }
      }
    }

    /// Deletions are not mirrored: a deleted key is created again from the file, a deleted
    /// file again from the key.
    @Test func aDeletedSideIsCreatedAgainFromTheOther() throws {
      try withTemporaryDirectory { directory in
        let rig = try MirrorRig(in: directory)
        try rig.withMirrors([0, 1], startingFrom: #"{"v": 1}"#) { _ in
          let deleted = try rig.cluster.etcdctl(["del", rig.key])
          #expect(deleted.standardOutput == "1\n", "\(deleted.summary)")
          #expect(rig.waitUntilConverged([0, 1]) { $0 == ["v": 1] }, "\(rig.state([0, 1]))")
          try FileManager.default.removeItem(atPath: rig.file(1))
          #expect(rig.waitUntilConverged([0, 1]) { $0 == ["v": 1] }, "\(rig.state([0, 1]))")
          #expect(try CLI.run(["set", rig.file(1), "v", "2"]).succeeded)
          #expect(rig.waitUntilConverged([0, 1]) { $0 == ["v": 2] }, "still mirrored after: \(rig.state([0, 1]))")
        }
      }
    }
  }
}

/// Every version of the rig's key, oldest first, with its revision: a watch from the key's
/// creation to its current revision.
private func keyHistory(_ rig: MirrorRig) throws -> [(revision: Int64, value: JSONValue)] {
  guard let current = try rig.keyRecord() else { return [] }
  let client = try rig.cluster.client()
  let stream = try client.watch(.key(Array(rig.key.utf8)), startRevision: current.createRevision, progressNotify: false)
  defer { stream.close() }
  var versions: [(Int64, JSONValue)] = []
  while versions.last?.0 ?? 0 < current.modRevision {
    guard let response = try stream.next(timeout: .seconds(5)) else { break }
    for event in response.events where event.kind == .put {
      versions.append((event.keyValue.modRevision, (try? JSONValue(parsing: event.keyValue.value)) ?? .null))
    }
  }
  return versions
}

/// The process `parent` (strace) started, from `/proc/PID/task/PID/children`.
private func tracedChild(of parent: Int32) -> Int32? {
  let text = (try? String(contentsOfFile: "/proc/\(parent)/task/\(parent)/children", encoding: .utf8)) ?? ""
  return text.split(separator: " ").first.flatMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
}
