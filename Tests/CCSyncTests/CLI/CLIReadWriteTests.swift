import Foundation
import Testing

/// `ccsync get`, `load`, `set`, `delete` and `save` run as the built binary: stdout, stderr
/// and the exit status, and the file's bytes afterwards.
@Suite struct CLIReadWriteTests {
  /// A temporary directory holding a copy of the example document as `config.json`.
  struct Fixture {
    let directory: TemporaryDirectory
    var file: String { directory.file("config.json") }
  }

  /// Runs `body` with a new ``Fixture``, removed when `body` returns or throws.
  private func withFixture(_ body: (Fixture) throws -> Void) throws {
    try withTemporaryDirectory { directory in
      let fixture = Fixture(directory: directory)
      try FileManager.default.copyItem(atPath: CLI.exampleURL.path, toPath: fixture.file)
      try body(fixture)
    }
  }

  @Test func getPrintsValuesPrettyCompactAndRaw() throws {
    try withFixture { fixture in
      let port = try CLI.run(["get", fixture.file, "server.port"])
      #expect(port.status == 0 && port.standardOutput == "8080\n" && port.standardError == "", "\(port.summary)")

      let tls = try CLI.run(["get", fixture.file, "server.tls"])
      #expect(tls.standardOutput == "{\n  \"enabled\": false,\n  \"certificate\": \"/etc/ccsync/cert.pem\"\n}\n")

      let compact = try CLI.run(["get", "-c", fixture.file, "servers[0]"])
      #expect(compact.standardOutput == "{\"host\":\"alpha.internal\",\"port\":9001,\"weight\":0.7}\n")

      let quoted = try CLI.run(["get", fixture.file, "servers.1.host"])
      #expect(quoted.standardOutput == "\"beta.internal\"\n")
      let raw = try CLI.run(["get", "--raw", fixture.file, "/servers/1/host"])
      #expect(raw.standardOutput == "beta.internal\n")
      let escapes = try CLI.run(["get", "-r", fixture.file, "greeting"])
      #expect(escapes.standardOutput == "Grüße, \"friend\"\n\n")

      // Numbers keep their text.
      let numbers = try CLI.run(["get", "--compact", fixture.file, "/maxUploadBytes"])
      #expect(numbers.standardOutput == "12345678901234567890\n")
      let ratio = try CLI.run(["get", fixture.file, "ratio"])
      #expect(ratio.standardOutput == "1.50\n")
    }
  }

  @Test func loadAndGetWithoutPathPrintTheWholeDocument() throws {
    try withFixture { fixture in
      let expected = try String(contentsOf: CLI.exampleURL, encoding: .utf8)
      let load = try CLI.run(["load", fixture.file])
      let get = try CLI.run(["get", fixture.file])
      #expect(load.status == 0 && get.status == 0)
      #expect(load.standardOutput == get.standardOutput)
      // Same meaning as the file; laid out 2-space pretty, one member per line.
      #expect(load.standardOutput.hasPrefix("{\n  \"name\": \"ccsync demo service\",\n"))
      #expect(load.standardOutput.contains("\"timeouts\": {\n      \"connect\": 2.5,"))
      #expect(load.standardOutput.count > expected.count / 2)
    }
  }

  @Test func getReportsMissingValuesFilesAndPaths() throws {
    try withFixture { fixture in
      let absent = try CLI.run(["get", fixture.file, "server.nope"])
      #expect(absent.status == 1 && absent.standardOutput == "")
      #expect(absent.standardError == "ccsync: no value at 'server.nope' in '\(fixture.file)'\n")

      let throughScalar = try CLI.run(["get", fixture.file, "server.port.x"])
      #expect(throughScalar.status == 65, "\(throughScalar.summary)")
      #expect(throughScalar.standardError.contains("'server.port.x' goes through a number"))
      #expect(throughScalar.standardError.contains(fixture.file))

      let missing = try CLI.run(["get", fixture.directory.file("none.json"), "a"])
      #expect(missing.status == 66 && missing.standardError.contains("none.json"), "\(missing.summary)")

      let missingDirectory = try CLI.run(["get", fixture.directory.file("no/such.json")])
      #expect(missingDirectory.status == 66, "\(missingDirectory.summary)")

      expectUsageError(try CLI.run(["get", fixture.file, "a..b"]), command: "get", token: "a..b")
      expectUsageError(try CLI.run(["get", fixture.file, "servers[x]"]), command: "get", token: "servers[x]")
    }
  }

  @Test func setStoresJSONOrStringsAndKeepsEverythingElse() throws {
    try withFixture { fixture in
      let before = try #require(CLI.bytes(fixture.file))
      #expect(try CLI.run(["set", fixture.file, "server.port", "9090"]).status == 0)
      #expect(try CLI.run(["get", fixture.file, "server.port"]).standardOutput == "9090\n")
      #expect(try CLI.run(["set", fixture.file, "theme", "dark mode"]).status == 0)
      #expect(try CLI.run(["get", fixture.file, "theme"]).standardOutput == "\"dark mode\"\n")
      #expect(try CLI.run(["set", "--string", fixture.file, "version", "4"]).status == 0)
      #expect(try CLI.run(["get", fixture.file, "version"]).standardOutput == "\"4\"\n")
      #expect(try CLI.run(["set", fixture.file, "features.beta.groups", "[\"a\"]"]).status == 0)
      #expect(try CLI.run(["get", "-c", fixture.file, "features.beta"]).standardOutput == "{\"rollout\":0.25,\"groups\":[\"a\"]}\n")
      #expect(try CLI.run(["set", fixture.file, "delta", "-5"]).status == 0)
      #expect(try CLI.run(["get", fixture.file, "delta"]).standardOutput == "-5\n")

      // Untouched values keep their text and order; new keys go at the end.
      let text = try String(contentsOfFile: fixture.file, encoding: .utf8)
      #expect(text.contains("\"ratio\": 1.50,"))
      #expect(text.contains("\"maxUploadBytes\": 12345678901234567890,"))
      #expect(text.contains("\"greeting\": \"Grüße, \\\"friend\\\"\\n\","))
      #expect(text.hasSuffix("  \"counter\": 0,\n  \"delta\": -5\n}\n"))
      #expect(before != CLI.bytes(fixture.file))
    }
  }

  /// `é` precomposed and `e` with a combining accent are two keys: get, set and delete reach
  /// the one whose bytes the path names, and leave the other as it was.
  @Test func canonicallyEquivalentKeysAreTwoMembers() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("keys.json")
      let (composed, decomposed) = ("\u{E9}", "e\u{301}")
      try CLI.write("{\n  \"\(composed)\": 1,\n  \"\(decomposed)\": 2\n}\n", to: file)
      let get = try CLI.run(["get", file, "/" + decomposed])
      #expect(get.status == 0 && get.standardOutput == "2\n", "\(get.summary)")
      let set = try CLI.run(["set", file, "/" + decomposed, "5"])
      #expect(set.status == 0, "\(set.summary)")
      #expect(CLI.bytes(file) == Data("{\n  \"\(composed)\": 1,\n  \"\(decomposed)\": 5\n}\n".utf8))
      let delete = try CLI.run(["delete", file, "/" + composed])
      #expect(delete.status == 0, "\(delete.summary)")
      #expect(CLI.bytes(file) == Data("{\n  \"\(decomposed)\": 5\n}\n".utf8))
    }
  }

  @Test func setWithJSONRequiresJSON() throws {
    try withFixture { fixture in
      let before = CLI.bytes(fixture.file)
      let outcome = try CLI.run(["set", "--json", fixture.file, "theme", "dark"])
      #expect(outcome.status == 65, "\(outcome.summary)")
      #expect(outcome.standardError.contains("'dark' is not valid JSON"))
      #expect(CLI.bytes(fixture.file) == before)
      #expect(try CLI.run(["set", "-j", fixture.file, "theme", "\"dark\""]).status == 0)
      expectUsageError(try CLI.run(["set", "-s", "-j", fixture.file, "a", "1"]), command: "set", token: "--string")
    }
  }

  @Test func setCreatesTheFileAndMissingObjects() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("new.json")
      let outcome = try CLI.run(["set", file, "a.b.c", "true"])
      #expect(outcome.status == 0, "\(outcome.summary)")
      #expect(try String(contentsOfFile: file, encoding: .utf8) == "{\n  \"a\": {\n    \"b\": {\n      \"c\": true\n    }\n  }\n}\n")

      let noDirectory = try CLI.run(["set", directory.file("missing/new.json"), "a", "1"])
      #expect(noDirectory.status == 66, "\(noDirectory.summary)")
      #expect(noDirectory.standardError.contains("missing/new.json"))
      #expect(!FileManager.default.fileExists(atPath: directory.file("missing")))
    }
  }

  @Test func setThroughAScalarIsInvalidData() throws {
    try withFixture { fixture in
      let before = CLI.bytes(fixture.file)
      let outcome = try CLI.run(["set", fixture.file, "theme.color", "1"])
      #expect(outcome.status == 65, "\(outcome.summary)")
      #expect(outcome.standardError.contains("goes through a string"))
      let beyond = try CLI.run(["set", fixture.file, "servers[5]", "1"])
      #expect(beyond.status == 65, "\(beyond.summary)")
      #expect(CLI.bytes(fixture.file) == before)
    }
  }

  @Test func deleteRemovesOrExitsOneLeavingTheFileUnchanged() throws {
    try withFixture { fixture in
      #expect(try CLI.run(["delete", fixture.file, "server.tls"]).status == 0)
      #expect(try CLI.run(["get", fixture.file, "server.tls"]).status == 1)
      let before = CLI.bytes(fixture.file)
      let again = try CLI.run(["delete", fixture.file, "server.tls"])
      #expect(again.status == 1 && again.standardError == "ccsync: no value at 'server.tls' in '\(fixture.file)'\n")
      #expect(CLI.bytes(fixture.file) == before)

      let missing = fixture.directory.file("none.json")
      let outcome = try CLI.run(["delete", missing, "a"])
      #expect(outcome.status == 66, "\(outcome.summary)")
      #expect(!FileManager.default.fileExists(atPath: missing))
    }
  }

  @Test func saveReplacesOrMergesFromStandardInput() throws {
    try withFixture { fixture in
      let saved = try CLI.run(["save", fixture.file], input: "{\"b\": 1, \"a\": [1, 2.50]}")
      #expect(saved.status == 0, "\(saved.summary)")
      // Standard input is written as it is: its layout and number text.
      #expect(try String(contentsOfFile: fixture.file, encoding: .utf8) == "{\"b\": 1, \"a\": [1, 2.50]}")

      let merged = try CLI.run(["save", "--merge", fixture.file], input: "{\"a\": null, \"c\": {\"d\": true}}")
      #expect(merged.status == 0, "\(merged.summary)")
      #expect(try CLI.run(["get", "-c", fixture.file]).standardOutput == "{\"b\":1,\"c\":{\"d\":true}}\n")

      let before = CLI.bytes(fixture.file)
      let invalid = try CLI.run(["save", fixture.file], input: "{\"a\": 1,}")
      #expect(invalid.status == 65, "\(invalid.summary)")
      #expect(invalid.standardError.contains("trailing comma") && invalid.standardError.contains("line 1, column 8"), "\(invalid.summary)")
      #expect(CLI.bytes(fixture.file) == before)
      let empty = try CLI.run(["save", "--merge", fixture.file], input: "")
      #expect(empty.status == 65)
      #expect(CLI.bytes(fixture.file) == before)

      let created = fixture.directory.file("created.json")
      #expect(try CLI.run(["save", created], input: "[]").status == 0)
      #expect(try String(contentsOfFile: created, encoding: .utf8) == "[]")
    }
  }

  @Test func writesWaitForOrGiveUpOnTheLock() throws {
    _ = try FaultTools.tool("flock")
    try withFixture { fixture in
      let holder = try FlockHolder(lockFile: fixture.file + ".lock", in: fixture.directory)
      defer { holder.stop() }
      let before = CLI.bytes(fixture.file)
      let nonBlocking = try CLI.run(["set", "-n", fixture.file, "a", "1"])
      #expect(nonBlocking.status == 1, "\(nonBlocking.summary)")
      #expect(nonBlocking.standardError.contains("is locked by another process"))
      let clock = ContinuousClock()
      let start = clock.now
      let timedOut = try CLI.run(["delete", "--wait=0.3", fixture.file, "theme"])
      #expect(timedOut.status == 1, "\(timedOut.summary)")
      #expect(clock.now - start >= .milliseconds(300))
      #expect(try CLI.run(["save", "-w", "0.2", fixture.file], input: "{}").status == 1)
      #expect(CLI.bytes(fixture.file) == before)
    }
  }
}
