import Foundation
import Testing

extension CLIEtcdTests {
  /// `get`, `load`, `set`, `delete`, `save` and `edit` on a key, and what each failure of the
  /// cluster exits with.
  @Suite struct ReadWrite {
    @Test func eachCommandReadsAndWritesTheKeyAsAFile() throws {
      try withEtcd { cluster, _ in
        let url = cluster.url("cfg/app")

        let missing = try CLI.run(["get", url])
        #expect(missing.status == 66 && missing.standardOutput == "", "\(missing.summary)")
        #expect(missing.standardError == "ccsync: '\(url)': no such key\n")
        let deleteMissing = try CLI.run(["delete", url, "a"])
        #expect(deleteMissing.status == 66, "\(deleteMissing.summary)")
        #expect(try cluster.value("cfg/app") == nil, "a delete does not create the key")

        // set creates the key, pretty, as it creates a file.
        let set = try CLI.run(["set", url, "server.port", "8080"])
        #expect(set.status == 0 && set.standardError == "", "\(set.summary)")
        #expect(try cluster.value("cfg/app") == "{\n  \"server\": {\n    \"port\": 8080\n  }\n}\n")

        // A foreign write is what the next command reads and writes on.
        try cluster.put("cfg/app", #"{"server": {"port": 9090, "host": "a"}, "name": "x"}"#)
        #expect(try CLI.run(["get", url, "server.port"]).standardOutput == "9090\n")
        #expect(try CLI.run(["get", "--raw", url, "name"]).standardOutput == "x\n")
        // With no hosts in the URL, the endpoints come from ETCDCTL_ENDPOINTS, as for etcdctl.
        let endpoints = CLI.environment(["ETCDCTL_ENDPOINTS": "http://" + cluster.endpoints[0]])
        #expect(try CLI.run(["get", "etcd:///cfg/app", "name"], environment: endpoints).standardOutput == "\"x\"\n")
        #expect(try CLI.run(["get", "-c", url, "server"]).standardOutput == #"{"port":9090,"host":"a"}"# + "\n")
        let noValue = try CLI.run(["get", url, "nope"])
        #expect(noValue.status == 1 && noValue.standardError == "ccsync: no value at 'nope' in '\(url)'\n", "\(noValue.summary)")

        #expect(try CLI.run(["set", "-w", "10", url, "server.host", "b"]).status == 0)
        #expect(try CLI.run(["delete", "-n", url, "name"]).status == 0)
        let deleteNone = try CLI.run(["delete", url, "name"])
        #expect(deleteNone.status == 1, "\(deleteNone.summary)")
        // etcdctl's one-line layout is kept: only the changed values' text differs.
        #expect(try cluster.value("cfg/app") == #"{"server": {"port": 9090, "host": "b"}}"#)

        let merge = try CLI.run(["save", "--merge", url], input: #"{"server": {"host": null}, "tier": 2}"#)
        #expect(merge.status == 0, "\(merge.summary)")
        #expect(try CLI.run(["load", url]).standardOutput == "{\n  \"server\": {\n    \"port\": 9090\n  },\n  \"tier\": 2\n}\n")
        let save = try CLI.run(["save", url], input: #"{"replaced": true}"#)
        #expect(save.status == 0, "\(save.summary)")
        #expect(try cluster.value("cfg/app") == #"{"replaced": true}"#, "standard input written as it is")
        let saveNew = try CLI.run(["save", cluster.url("cfg/new")], input: "[1]")
        #expect(saveNew.status == 0, "\(saveNew.summary)")
        #expect(try cluster.value("cfg/new") == "[1]")
      }
    }

    /// Invalid JSON in the key: every read and write fails with 65 naming the key, and no
    /// write changes it or keeps a copy aside.
    @Test func anInvalidValueIs65AndNeverWritten() throws {
      try withEtcd { cluster, _ in
        let url = cluster.url("cfg/app")
        try cluster.put("cfg/app", "{not json")
        let attempts: [(arguments: [String], input: String?)] = [
          (["get", url], nil), (["load", url], nil), (["set", url, "a", "1"], nil), (["delete", url, "a"], nil),
          (["save", url], "{}"), (["save", "--merge", url], "{}"), (["edit", url], nil),
        ]
        for attempt in attempts {
          let outcome = try CLI.run(attempt.arguments, input: attempt.input, environment: CLI.environment(["EDITOR": "true"]))
          #expect(outcome.status == 65, "\(attempt.arguments): \(outcome.summary)")
          #expect(outcome.standardError.contains("'\(url)' is not valid JSON"), "\(attempt.arguments): \(outcome.summary)")
        }
        #expect(try cluster.value("cfg/app") == "{not json")
        #expect(try cluster.keys(prefix: "cfg/") == ["cfg/app"], "no copy kept aside")
      }
    }

    @Test func aValueOverTheClustersLimitIs74NamingTheLimit() throws {
      try withEtcd(flags: ["--max-request-bytes", "20000"]) { cluster, _ in
        let url = cluster.url("cfg/app")
        #expect(try CLI.run(["set", url, "small", "true"]).status == 0)
        let big = "{\"big\": \"" + String(repeating: "x", count: 30_000) + "\"}"
        let outcome = try CLI.run(["save", url], input: big)
        #expect(outcome.status == 74, "\(outcome.summary)")
        #expect(outcome.standardError.contains("'\(url)'"), "\(outcome.summary)")
        #expect(outcome.standardError.contains("too large") && outcome.standardError.contains("--max-request-bytes"), "\(outcome.summary)")
        #expect(outcome.standardError.hasSuffix("; nothing written\n"), "\(outcome.summary)")
        #expect(try cluster.value("cfg/app") == "{\n  \"small\": true\n}\n")
      }
    }

    /// No member answers: 69, naming every endpoint, within the client's deadline; for
    /// every command, `lock` and `watch` included.
    @Test func anUnreachableClusterIs69NamingEveryEndpoint() throws {
      let ports = try EtcdCluster.freePorts(2)
      let url = "etcd://127.0.0.1:\(ports[0]),127.0.0.1:\(ports[1])/cfg/app"
      let commands: [[String]] = [
        ["get", url], ["set", url, "a", "1"], ["delete", url, "a"], ["edit", url], ["watch", url],
        ["lock", url, "--", "true"], ["lock", "-n", url, "--", "true"], ["stress", "--iterations", "1", url],
      ]
      for arguments in commands {
        let (outcome, seconds) = try timed { try CLI.run(arguments, deadline: .seconds(20)) }
        #expect(outcome.status == 69, "\(arguments): \(outcome.summary)")
        for port in ports { #expect(outcome.standardError.contains("127.0.0.1:\(port)"), "\(arguments): \(outcome.summary)") }
        #expect(seconds < 6, "\(arguments) took \(seconds) s")
      }
      // The endpoints may come from ETCDCTL_ENDPOINTS, as for etcdctl.
      let fromEnvironment = try CLI.run(
        ["get", "etcd:///cfg/app"], environment: CLI.environment(["ETCDCTL_ENDPOINTS": "http://127.0.0.1:\(ports[0])"]))
      #expect(fromEnvironment.status == 69 && fromEnvironment.standardError.contains("127.0.0.1:\(ports[0])"), "\(fromEnvironment.summary)")
    }

    /// A member that stops answering (SIGSTOP: its socket still accepts) costs a read one
    /// attempt; a write with `-w 10` keeps trying it for its 10 s, then exits 69: neither hangs.
    @Test func aFrozenMemberDoesNotHangAReadOrAWaitingWrite() throws {
      try withEtcd { cluster, _ in
        let url = cluster.url("cfg/app")
        #expect(try CLI.run(["set", url, "a", "1"]).status == 0)
        try cluster.freeze(0)
        defer { try? cluster.thaw(0) }
        for arguments in [["get", url], ["set", "-w", "10", url, "a", "2"]] {
          let (outcome, seconds) = try timed { try CLI.run(arguments, deadline: .seconds(30)) }
          #expect(outcome.status == 69, "\(arguments): \(outcome.summary)")
          #expect(outcome.standardError.contains(cluster.endpoints[0]), "\(arguments): \(outcome.summary)")
          #expect(seconds < 13, "\(arguments) took \(seconds) s")
        }
        try cluster.thaw(0)
        #expect(try CLI.run(["get", url, "a"]).standardOutput == "1\n")
      }
    }

    @Test func credentialsComeFromETCDCTL_USER() throws {
      try withEtcd { cluster, _ in
        let root = "root:secret"
        #expect(try cluster.etcdctl(["user", "add", root]).status == 0)
        let enable = try cluster.etcdctl(["auth", "enable"])
        #expect(enable.status == 0, "\(enable.summary)")
        let url = cluster.url("cfg/app")
        let right = CLI.environment(["ETCDCTL_USER": root])
        let set = try CLI.run(["set", url, "a", "1"], environment: right)
        #expect(set.status == 0, "\(set.summary)")
        #expect(try cluster.value("cfg/app", user: root) == "{\n  \"a\": 1\n}\n")
        #expect(try CLI.run(["get", url, "a"], environment: right).standardOutput == "1\n")
        #expect(try CLI.run(["lock", url, "--", "true"], environment: right).status == 0)

        let wrong = CLI.environment(["ETCDCTL_USER": "root:wrong"])
        var none = ProcessInfo.processInfo.environment
        none["ETCDCTL_USER"] = nil
        for (environment, arguments) in [(wrong, ["get", url]), (wrong, ["set", url, "a", "2"]), (wrong, ["lock", url, "--", "true"]), (none, ["get", url])] {
          let outcome = try CLI.run(arguments, environment: environment)
          #expect(outcome.status == 77, "\(arguments): \(outcome.summary)")
          #expect(outcome.standardError.contains("authentication failed"), "\(arguments): \(outcome.summary)")
        }
        #expect(try cluster.value("cfg/app", user: root) == "{\n  \"a\": 1\n}\n")
      }
    }

    @Test func aMalformedURLIsAUsageErrorNamingIt() throws {
      for url in ["etcd://127.0.0.1:2379", "etcd://127.0.0.1:2379/", "etcd://a:1,,b:2/k", "etcd://host:99999/k"] {
        for arguments in [["get", url], ["set", url, "a", "1"], ["watch", url], ["lock", url, "--", "true"], ["stress", url]] {
          let outcome = try CLI.run(arguments)
          expectUsageError(outcome, command: arguments[0], token: url)
        }
      }
      let environment = CLI.environment(["ETCDCTL_ENDPOINTS": "127.0.0.1:notaport"])
      expectUsageError(try CLI.run(["get", "etcd:///k"], environment: environment), command: "get", token: "etcd:///k")
      // What makes no sense for a key is refused too, naming the option.
      expectUsageError(try CLI.run(["watch", "--poll", "1", "etcd:///k"]), command: "watch", token: "--poll")
      expectUsageError(try CLI.run(["lock", "-s", "etcd:///k", "--", "true"]), command: "lock", token: "--shared")
      expectUsageError(try CLI.run(["lock", "--ttl", "5", "/tmp/x.json", "--", "true"]), command: "lock", token: "--ttl")
    }

    /// `edit`: the copy is named after the key's last component; the fields the edit changed
    /// are merged into what the key holds now, by compare-and-swap; a field both changed is 75.
    @Test func editMergesWithAWriteMadeWhileEditing() throws {
      try withEtcd { cluster, directory in
        let url = cluster.url("cfg/app")
        try cluster.put("cfg/app", #"{"port": 1, "host": "a"}"#)
        // The editor records the copy's path, lets another writer change a field meanwhile, and
        // edits one field of the copy.
        let editor = directory.file("editor.sh")
        try CLI.write("""
          #!/bin/sh
          echo "$1" > '\(directory.file("copy"))'
          ETCDCTL_API=3 etcdctl --endpoints=\(cluster.endpoints[0]) put cfg/app "$FOREIGN" >/dev/null || exit 9
          sed -i "s/\\"port\\": 1/\\"port\\": 2/" "$1"
          """, to: editor)
        chmod(editor, 0o755)
        let edit = try CLI.run(["edit", url], environment: CLI.environment(["EDITOR": editor, "FOREIGN": #"{"port": 1, "host": "b"}"#]))
        #expect(edit.status == 0, "\(edit.summary)")
        let copy = try String(contentsOfFile: directory.file("copy"), encoding: .utf8)
        #expect(copy.hasSuffix("/app.json\n"), "\(copy)")
        #expect(try CLI.run(["get", "-c", url]).standardOutput == #"{"port":2,"host":"b"}"# + "\n")

        // The edit makes the port 2 while the other writer makes it 5.
        try cluster.put("cfg/app", #"{"port": 1, "host": "b"}"#)
        let clash = try CLI.run(["edit", url], environment: CLI.environment(["EDITOR": editor, "FOREIGN": #"{"port": 5, "host": "b"}"#]))
        #expect(clash.status == 75, "\(clash.summary)")
        #expect(clash.standardError.contains("port: edited 2, key now 5 (was 1)"), "\(clash.summary)")
        #expect(try cluster.value("cfg/app") == #"{"port": 5, "host": "b"}"#, "nothing written")
      }
    }

    @Test func stressOverEtcdIsExact() throws {
      try withEtcd { cluster, _ in
        try cluster.put("bench", #"{"counter": 10}"#)
        let outcome = try CLI.run(["stress", "--processes", "4", "--iterations", "50", cluster.url("bench")], deadline: .seconds(60))
        #expect(outcome.status == 0, "\(outcome.summary)")
        let lines = CLI.lines(outcome.standardOutput)
        #expect(lines.first == "processes: 4" && lines.contains("iterations: 50") && lines[4] == "lost updates: 0", "\(lines)")
        #expect(lines.contains { $0.hasPrefix("retries: ") } && lines.contains { $0.hasPrefix("time to a successful swap: p50 ") }, "\(lines)")
        #expect(try CLI.run(["get", cluster.url("bench"), "counter"]).standardOutput == "210\n")
        // --mode lock takes etcd's lock: holders never overlap, the key is not written.
        let lock = try CLI.run(["stress", "--mode", "lock", "--processes", "2", "--iterations", "5", cluster.url("bench-lock")], deadline: .seconds(60))
        #expect(lock.status == 0 && CLI.lines(lock.standardOutput).contains("overlapping holders: 0"), "\(lock.summary)")
      }
    }
  }
}
