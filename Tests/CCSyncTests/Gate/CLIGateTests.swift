import Foundation
import Testing

/// The gate on the command line: a `$schema` that travels with the document, `--schema`,
/// `--check` with its time-out, `validate`, and values that are not what they look like.
/// Every refusal exits 65 (66 for a schema that cannot be found) and writes nothing.
@Suite struct CLIGateTests {
  static let schema = """
    {"type": "object", "required": ["server"],
     "properties": {"server": {"type": "object", "required": ["port"],
       "properties": {"port": {"type": "integer", "minimum": 1, "maximum": 65535},
                      "timeout": {"type": "number", "minimum": 0}}}}}
    """

  /// `app.json` naming `./app.schema.json` beside it.
  private func documentWithSchema(in directory: TemporaryDirectory) throws -> String {
    try CLI.write(Self.schema, to: directory.file("app.schema.json"))
    let file = directory.file("app.json")
    try CLI.write("{\n  \"$schema\": \"./app.schema.json\",\n  \"server\": {\n    \"port\": 8080\n  }\n}\n", to: file)
    return file
  }

  @Test func aWriteThatFailsTheDocumentsSchemaIsRefusedAndWritesNothing() throws {
    try withTemporaryDirectory { directory in
      let file = try documentWithSchema(in: directory)
      let before = CLI.bytes(file)
      for (path, value, message) in [
        ("server.port", "8080.5", "/server/port: 8080.5 is not an integer (type)"),
        ("server.port", "\"8080\"", "/server/port: \"8080\" is not an integer (type)"),
        ("server.timeout", "-1", "/server/timeout"),
        ("server", "{}", "/server: "),
      ] {
        let outcome = try CLI.run(["set", file, path, value])
        #expect(outcome.status == 65, "\(path)=\(value): \(outcome.summary)")
        #expect(outcome.standardError.contains("'\(file)': "), "\(outcome.summary)")
        #expect(outcome.standardError.contains(message), "\(outcome.summary)")
        #expect(CLI.bytes(file) == before, "\(path)=\(value) changed the file")
      }
      let deleted = try CLI.run(["delete", file, "server.port"])
      #expect(deleted.status == 65 && deleted.standardError.contains("required"), "\(deleted.summary)")
      let saved = try CLI.run(["save", file], input: "{\"server\": {\"port\": 0}}")
      #expect(saved.status == 65, "\(saved.summary)")
      #expect(CLI.bytes(file) == before)
      // A good write passes, and keeps the `$schema` member.
      #expect(try CLI.run(["set", file, "server.port", "9090"]).status == 0)
      let after = try CLI.run(["get", "-c", file])
      #expect(after.standardOutput == "{\"$schema\":\"./app.schema.json\",\"server\":{\"port\":9090}}\n")
    }
  }

  @Test func getShowsWhatIsStoredWhateverTheSchemaSays() throws {
    try withTemporaryDirectory { directory in
      let file = try documentWithSchema(in: directory)
      try CLI.write("{\"$schema\": \"./app.schema.json\", \"server\": {\"port\": \"bad\"}}\n", to: file)
      #expect(try CLI.run(["get", "-r", file, "server.port"]).standardOutput == "bad\n")
      #expect(try CLI.run(["load", file]).status == 0)
    }
  }

  @Test func anExplicitSchemaOverridesAndAnEditorsURLIsNotEnforced() throws {
    try withTemporaryDirectory { directory in
      let schema = directory.file("strict.json")
      try CLI.write(#"{"properties": {"n": {"type": "string"}}}"#, to: schema)
      let file = directory.file("d.json")
      try CLI.write(#"{"$schema": "https://json.schemastore.org/package.json", "n": "x"}"#, to: file)
      // The URL is an editor's: not fetched, not enforced.
      #expect(try CLI.run(["set", file, "n", "1"]).status == 0)
      let refused = try CLI.run(["set", "--schema", schema, file, "n", "2"])
      #expect(refused.status == 65 && refused.standardError.contains("/n: 2 is not a string (type)"), "\(refused.summary)")
    }
  }

  @Test func aMissingOrInvalidSchemaIsNamedAndNothingIsWritten() throws {
    try withTemporaryDirectory { directory in
      let missing = directory.file("m.json")
      try CLI.write(#"{"$schema": "./nowhere.json", "a": 1}"#, to: missing)
      let before = CLI.bytes(missing)
      let outcome = try CLI.run(["set", missing, "a", "2"])
      #expect(outcome.status == 66 && outcome.standardError.contains("nowhere.json"), "\(outcome.summary)")
      #expect(CLI.bytes(missing) == before)

      for (schema, fragment) in [("{\"type\": 12}", "type"), ("{not json", "not valid JSON"),
                                 ("{\"pattern\": \"(\"}", "pattern"), ("{\"$ref\": \"#\"}", "$ref")] {
        try CLI.write(schema, to: directory.file("bad.schema.json"))
        let file = directory.file("b.json")
        try CLI.write(#"{"$schema": "bad.schema.json", "a": 1}"#, to: file)
        let refused = try CLI.run(["set", file, "a", "2"])
        #expect(refused.status == 65, "\(schema): \(refused.summary)")
        #expect(refused.standardError.contains("bad.schema.json") && refused.standardError.contains(fragment), "\(schema): \(refused.summary)")
        #expect(try CLI.run(["get", file, "a"]).standardOutput == "1\n")
      }
    }
  }

  @Test func aValueThatLooksLikeJSONMustBeJSON() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      try CLI.write("{}\n", to: file)
      for value in ["{oops", "[1,", "\"unterminated", "  {\"a\":}"] {
        let outcome = try CLI.run(["set", file, "a", value])
        #expect(outcome.status == 65 && outcome.standardError.contains("not valid JSON"), "\(value): \(outcome.summary)")
      }
      #expect(CLI.bytes(file) == Data("{}\n".utf8))
      #expect(try CLI.run(["set", "-s", file, "a", "{oops"]).status == 0)
      #expect(try CLI.run(["get", "-r", file, "a"]).standardOutput == "{oops\n")
      #expect(try CLI.run(["set", file, "b", "plain words"]).status == 0)
    }
  }

  @Test func aCheckSeesTheCandidateAndItsRefusalIsShown() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      try CLI.write("{\"a\": 1}\n", to: file)
      // The check sees exactly the candidate, on stdin and in $CCSYNC_CANDIDATE.
      let seen = directory.file("seen")
      let accepted = try CLI.run(["set", "--check", "cat > '\(seen)' && cmp '\(seen)' \"$CCSYNC_CANDIDATE\"", file, "a", "2"])
      #expect(accepted.status == 0, "\(accepted.summary)")
      #expect(CLI.bytes(seen) == CLI.bytes(file))
      let refused = try CLI.run(["set", "--check", "echo 'port 2 is reserved' >&2; exit 3", file, "a", "3"])
      #expect(refused.status == 65, "\(refused.summary)")
      #expect(refused.standardError.contains("refused it (status 3): port 2 is reserved"), "\(refused.summary)")
      let missing = try CLI.run(["set", "--check", "no-such-check-command", file, "a", "4"])
      #expect(missing.status == 65 && missing.standardError.contains("could not be run (status 127)"), "\(missing.summary)")
      #expect(try CLI.run(["get", file, "a"]).standardOutput == "2\n")
    }
  }

  /// A check that hangs, or floods its standard error, is ended after its time-out: the
  /// command returns within a bound and writes nothing.
  @Test(arguments: ["sleep 30", "yes flood >&2", "sleep 30 & wait"])
  func aCheckThatDoesNotEndIsEndedAfterItsTimeout(_ check: String) throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      try CLI.write("{\"a\": 1}\n", to: file)
      let start = ContinuousClock.now
      let outcome = try CLI.run(["set", "--check", check, "--check-timeout", "0.5", file, "a", "2"])
      let took = ContinuousClock.now - start
      #expect(outcome.status == 65, "\(outcome.summary)")
      #expect(outcome.standardError.contains("still running after 0.5 s"), "\(outcome.summary)")
      #expect(outcome.standardError.utf8.count < 6000, "the flood reached the message")
      #expect(took < .seconds(20), "took \(took)")
      #expect(try CLI.run(["get", file, "a"]).standardOutput == "1\n")
    }
  }

  @Test func validateChecksDocumentsAndSaysWhy() throws {
    try withTemporaryDirectory { directory in
      let file = try documentWithSchema(in: directory)
      #expect(try CLI.run(["validate", file]).status == 0)
      let bad = directory.file("bad.json")
      try CLI.write(#"{"$schema": "./app.schema.json", "server": {"port": 8080.5, "timeout": -2}}"#, to: bad)
      let outcome = try CLI.run(["validate", file, bad])
      #expect(outcome.status == 65, "\(outcome.summary)")
      let lines = CLI.lines(outcome.standardError)
      #expect(lines.count == 2, "\(outcome.summary)")
      #expect(lines.contains { $0.hasPrefix("ccsync: '\(bad)': /server/port: 8080.5 is not an integer (type)") }, "\(lines)")
      #expect(lines.contains { $0.hasPrefix("ccsync: '\(bad)': /server/timeout: -2") }, "\(lines)")

      let json = try CLI.run(["validate", "--json", file, bad])
      let objects = try CLI.lines(json.standardOutput).map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
      #expect(objects.count == 2 && objects[0]?["valid"] as? Bool == true && objects[1]?["valid"] as? Bool == false)
      #expect((objects[1]?["errors"] as? [String])?.count == 2)

      let input = try CLI.run(["validate", "--schema", directory.file("app.schema.json"), "-"], input: #"{"server": {"port": 1}}"#)
      #expect(input.status == 0, "\(input.summary)")
      let noSchema = directory.file("plain.json")
      try CLI.write("{}", to: noSchema)
      expectUsageError(try CLI.run(["validate", noSchema]), command: "validate", token: noSchema)
      #expect(try CLI.run(["validate", directory.file("absent.json")]).status == 66)
    }
  }

  /// `watch --restart` never restarts its command into a refused version: it says so once
  /// and acts on the next good one.
  @Test func watchDoesNotActOnARefusedVersion() throws {
    try withTemporaryDirectory { directory in
      let file = try documentWithSchema(in: directory)
      let log = directory.file("starts")
      let watch = try CLI.start([
        "watch", "--restart", file, "server.port", "--", "sh", "-c", "echo \"$CCSYNC_VALUE\" >> '\(log)'; exec sleep 60",
      ])
      // Ended with SIGTERM, so that it stops its command (SIGKILL would leave it running).
      defer {
        kill(watch.process.processIdentifier, SIGTERM)
        _ = watch.wait(deadline: .seconds(15))
      }
      #expect(waitUntil { (try? String(contentsOfFile: log, encoding: .utf8)) == "8080\n" })
      // Another program writes a version the schema refuses, bypassing ccsync.
      try CLI.write("{\"$schema\": \"./app.schema.json\", \"server\": {\"port\": \"eighty\"}}\n", to: directory.file("next.json"))
      #expect(rename(directory.file("next.json"), file) == 0)
      #expect(waitUntil { watch.standardError.contains("not an integer") }, "\(watch.standardError)")
      #expect(try CLI.run(["set", "--schema", directory.file("app.schema.json"), file, "server.port", "9090"]).status == 0)
      #expect(waitUntil { (try? String(contentsOfFile: log, encoding: .utf8)) == "8080\n9090\n" })
      #expect((try? String(contentsOfFile: log, encoding: .utf8)) == "8080\n9090\n", "restarted into the refused version")
    }
  }

  /// Runs `body` with `ccsync watch --exec` on `app.json` (see ``documentWithSchema(in:)``)
  /// at `server.port`, once its command, which appends each value to a log, has run for
  /// 8080; `runs` reads that log. The watch is ended with SIGTERM, so that it stops its
  /// command (SIGKILL would leave it running).
  private func withWatchExec(
    in directory: TemporaryDirectory, _ body: (_ file: String, _ watch: ChildProcess, _ runs: () -> String?) throws -> Void
  ) throws {
    let file = try documentWithSchema(in: directory)
    let log = directory.file("runs")
    let watch = try CLI.start(["watch", "--exec", file, "server.port", "--", "sh", "-c", "echo \"$CCSYNC_VALUE\" >> '\(log)'"])
    defer {
      kill(watch.process.processIdentifier, SIGTERM)
      _ = watch.wait(deadline: .seconds(15))
    }
    let runs = { try? String(contentsOfFile: log, encoding: .utf8) }
    #expect(waitUntil { runs() == "8080\n" })
    try body(file, watch, runs)
  }

  /// `watch --exec` says of each refused version once, even of two refused for the same
  /// reason one after the other, runs its command for neither, and runs it for the next good
  /// version.
  @Test func watchSaysOfEachRefusedVersionOnce() throws {
    try withTemporaryDirectory { directory in
      try withWatchExec(in: directory) { file, watch, runs in
        let notes = { CLI.lines(watch.standardError).filter { $0.contains("/server/port: \"eighty\" is not an integer") } }
        // Another program writes two versions the schema refuses for the same reason, each
        // once the watch has said of the one before.
        for (index, timeout) in [1, 2].enumerated() {
          let next = directory.file("next.json")
          try CLI.write("{\"$schema\": \"./app.schema.json\", \"server\": {\"port\": \"eighty\", \"timeout\": \(timeout)}}\n", to: next)
          #expect(rename(next, file) == 0)
          #expect(waitUntil { notes().count == index + 1 }, "\(watch.standardError)")
        }
        #expect(Set(notes()).count == 1, "not the same reason: \(notes())")
        #expect(try CLI.run(["set", "--schema", directory.file("app.schema.json"), file, "server.port", "443"]).status == 0)
        #expect(waitUntil { runs() == "8080\n443\n" }, "\(watch.standardError)")
        #expect(runs() == "8080\n443\n", "run for a refused version")
        #expect(CLI.lines(watch.standardOutput) == ["8080", "443"], "\(watch.standardOutput)")
        #expect(notes().count == 2, "\(watch.standardError)")
      }
    }
  }

  /// `watch --exec` judges the value it holds again when only its schema changes: a value
  /// that no longer passes is one line on stderr, once, and the command is not run for it;
  /// the next good version is printed and acted on.
  @Test func watchJudgesItsValueAgainWhenOnlyTheSchemaChanges() throws {
    try withTemporaryDirectory { directory in
      try withWatchExec(in: directory) { file, watch, runs in
        // The schema alone changes: 8080 is now above its maximum.
        let stricter = Self.schema.replacingOccurrences(of: "\"maximum\": 65535", with: "\"maximum\": 1024")
        try CLI.write(stricter, to: directory.file("next.schema.json"))
        #expect(rename(directory.file("next.schema.json"), directory.file("app.schema.json")) == 0)
        #expect(waitUntil { watch.standardError.contains("8080 is greater than the maximum 1024") }, "\(watch.standardError)")
        // A good version, then the log shows it was acted on and the refusal said once.
        #expect(try CLI.run(["set", file, "server.port", "443"]).status == 0)
        #expect(waitUntil { runs() == "8080\n443\n" }, "\(watch.standardError)")
        #expect(CLI.lines(watch.standardOutput) == ["8080", "443"], "\(watch.standardOutput)")
        let notes = CLI.lines(watch.standardError).filter { $0.contains("greater than the maximum") }
        #expect(notes.count == 1, "\(notes)")
      }
    }
  }
}
