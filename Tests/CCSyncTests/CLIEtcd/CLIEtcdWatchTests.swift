import Foundation
import Testing

extension CLIEtcdTests {
  /// `ccsync watch etcd://...`: a line per value etcdctl puts, from the key's watch stream,
  /// and the commands `--exec`, `--restart` and `--signal` run.
  @Suite struct Watch {
    @Test func eachPutIsPrintedAndNotesAreGivenForTheRest() throws {
      try withEtcd { cluster, _ in
        let url = cluster.url("cfg/app")
        let watch = try CLI.start(["watch", "--count", "4", "--timeout", "20", url, "a"])
        // The note says the first read is done; the watch starts from the revision after it.
        #expect(waitUntil { watch.standardError.contains("no such key") }, "\(watch.standardError)")
        try cluster.put("cfg/app", #"{"a": 1}"#)
        try cluster.put("cfg/app", #"{"a": 1, "b": 0}"#)  // the same value at PATH: no line
        try cluster.put("cfg/app", "{not json")
        try cluster.put("cfg/app", #"{"a": 1}"#)  // after a note, printed even if equal
        #expect(try cluster.etcdctl(["del", "cfg/app"]).status == 0)
        try cluster.put("cfg/app", #"{"a": [2]}"#)
        try cluster.put("cfg/app", #"{"a": "three"}"#)
        let outcome = watch.wait(deadline: .seconds(20))
        #expect(outcome.status == 0, "\(outcome.summary)")
        #expect(CLI.lines(outcome.standardOutput) == ["1", "1", "[2]", #""three""#], "\(outcome.summary)")
        let notes = CLI.lines(outcome.standardError)
        #expect(notes.first == "ccsync: '\(url)': no such key; waiting for it", "\(notes)")
        #expect(notes.contains { $0.hasPrefix("ccsync: '\(url)' is not valid JSON") }, "\(notes)")
        #expect(notes.count == 3, "\(notes)")
      }
    }

    @Test func execRunsTheCommandWithTheValueAndTheKey() throws {
      try withEtcd { cluster, directory in
        let log = directory.file("log")
        let url = cluster.url("cfg/app")
        try cluster.put("cfg/app", #"{"n": 1}"#)
        let watch = try CLI.start([
          "watch", "--count", "2", "--timeout", "20", url, "n", "--", "sh", "-c", "echo \"$CCSYNC_VALUE $CCSYNC_FILE\" >> '\(log)'",
        ])
        #expect(waitUntil { watch.standardOutput == "1\n" })
        try cluster.put("cfg/app", #"{"n": 2}"#)
        let outcome = watch.wait(deadline: .seconds(20))
        #expect(outcome.status == 0 && outcome.standardOutput == "1\n2\n", "\(outcome.summary)")
        #expect(try String(contentsOfFile: log, encoding: .utf8) == "1 \(url)\n2 \(url)\n")
      }
    }

    /// `--restart`: the command starts with the first value and is restarted with the next;
    /// its own exit ends the watch with its status.
    @Test func restartStartsTheCommandAgainWithTheNewValue() throws {
      try withEtcd { cluster, _ in
        try cluster.put("cfg/app", #"{"n": 1}"#)
        let watch = try CLI.start([
          "watch", "--timeout", "20", cluster.url("cfg/app"), "n", "--restart", "--",
          "sh", "-c", "echo \"run $CCSYNC_VALUE\"; [ \"$CCSYNC_VALUE\" = 2 ] && exit 4; exec sleep 30",
        ])
        #expect(waitUntil { watch.standardOutput == "1\nrun 1\n" }, "\(watch.standardOutput)")
        try cluster.put("cfg/app", #"{"n": 2}"#)
        let outcome = watch.wait(deadline: .seconds(20))
        #expect(outcome.status == 4 && outcome.standardOutput == "1\nrun 1\n2\nrun 2\n", "\(outcome.summary)")
      }
    }

    /// `--signal HUP --debounce`: the command starts with the first value and gets HUP for a
    /// later one; it exits on it, and its status ends the watch.
    @Test func signalWithDebounceReachesTheCommand() throws {
      try withEtcd { cluster, directory in
        let ready = directory.file("ready")
        try cluster.put("cfg/app", #"{"n": 1}"#)
        let watch = try CLI.start([
          "watch", "--timeout", "20", cluster.url("cfg/app"), "n", "--signal", "HUP", "--debounce", "0.05", "--",
          "sh", "-c", "trap 'echo \"hup $CCSYNC_VALUE\"; exit 7' HUP; touch '\(ready)'; while :; do sleep 0.02; done",
        ])
        #expect(waitUntil { FileManager.default.fileExists(atPath: ready) })
        try cluster.put("cfg/app", #"{"n": 2}"#)
        let outcome = watch.wait(deadline: .seconds(20))
        #expect(outcome.status == 7, "\(outcome.summary)")
        #expect(outcome.standardOutput == "1\n2\nhup 1\n", "\(outcome.summary)")
      }
    }
  }
}
