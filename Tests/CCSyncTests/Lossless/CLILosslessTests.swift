import Foundation
import Testing
@testable import CCSync

/// Files people edit: every writer keeps their formatting and comments, JWCC files are read
/// as JWCC, an empty file is a document to start from, and a missing one leaves nothing.
@Suite struct CLILosslessTests {
  /// Hand-written files of several styles: a nested `set` then `set` back gives the original
  /// bytes, and the first change touches only the value's text.
  static let corpus: [(name: String, text: String, path: String, value: String)] = [
    ("settings.jsonc", "{\n    // Editor\n    \"editor.fontSize\": 13,\n    \"editor.rulers\": [80, 120], // columns\n    \"files.exclude\": {\n        \"**/.git\": true,\n    },\n}\n", "/files.exclude", "{\"**/.git\":false}"),
    ("package.json", "{\n  \"name\": \"demo\",\n  \"version\": \"1.0.0\",\n  \"scripts\": {\"test\": \"jest\", \"build\": \"tsc\"},\n  \"dependencies\": {\n    \"left-pad\": \"^1.3.0\"\n  }\n}\n", "scripts.test", "\"vitest\""),
    ("policy.hujson", "// Tailscale-style policy\n{\n\t\"acls\": [\n\t\t{\"action\": \"accept\", \"src\": [\"group:eng\"], \"dst\": [\"*:22\"]},\n\t],\n\t/* owners */\n\t\"tagOwners\": {\"tag:ci\": [\"group:eng\"]},\n}\n", "tagOwners.tag:ci", "[\"group:ops\"]"),
    ("one-line.json", "{\"a\":1,\"b\":{\"c\":[1,2,3],\"d\":\"caf\\u00e9\"}}", "a", "2"),
    ("crlf.json", "{\r\n    \"port\": 8080,\r\n    \"host\": \"a\"\r\n}\r\n", "port", "9090"),
    ("tabs.json", "{\n\t\"server\": {\n\t\t\"port\": 1.50,\n\t\t\"name\": \"\\u00e9\"\n\t}\n}\n", "server.port", "2"),
  ]

  @Test(arguments: corpus.map(\.name))
  func setThenSetBackKeepsEveryByte(_ name: String) throws {
    let entry = try #require(Self.corpus.first { $0.name == name })
    try withTemporaryDirectory { directory in
      let file = directory.file(entry.name)
      try CLI.write(entry.text, to: file)
      let original = try #require(CLI.bytes(file))
      let old = try CLI.run(["get", "-c", file, entry.path])
      #expect(old.status == 0, "\(old.summary)")
      let oldValue = String(old.standardOutput.dropLast())
      let changed = try CLI.run(["set", "--json", file, entry.path, entry.value])
      #expect(changed.status == 0, "\(changed.summary)")
      let after = try #require(CLI.bytes(file))
      // Only the value's text changed: the same bytes before and after it.
      let prefix = zip(original, after).prefix { $0 == $1 }.count
      let suffix = zip(original.reversed(), after.reversed()).prefix { $0 == $1 }.count
      #expect(original.count - prefix - suffix < oldValue.utf8.count + 8, "\(name): more than the value changed:\n\(String(decoding: after, as: UTF8.self))")
      let back = try CLI.run(["set", "--json", file, entry.path, oldValue])
      #expect(back.status == 0, "\(back.summary)")
      #expect(CLI.bytes(file) == original, "\(name) after set and set back:\n\(String(decoding: CLI.bytes(file) ?? Data(), as: UTF8.self))")
    }
  }

  @Test func aCommentInAStrictFileSaysHowToReadItAsJWCC() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("settings.json")
      try CLI.write("{\n  // a comment\n  \"a\": 1\n}\n", to: file)
      let strict = try CLI.run(["get", file, "a"])
      #expect(strict.status == 65 && strict.standardError.contains("line 2, column 3") && strict.standardError.contains("--jsonc"), "\(strict.summary)")
      #expect(try CLI.run(["get", "--jsonc", file, "a"]).standardOutput == "1\n")
      #expect(try CLI.run(["set", "--jsonc", file, "a", "2"]).status == 0)
      #expect(try String(contentsOfFile: file, encoding: .utf8) == "{\n  // a comment\n  \"a\": 2\n}\n")
      let unterminated = directory.file("u.jsonc")
      try CLI.write("{\"a\": 1 /* open\n}", to: unterminated)
      let refused = try CLI.run(["set", unterminated, "a", "2"])
      #expect(refused.status == 65 && refused.standardError.contains("line 1"), "\(refused.summary)")
    }
  }

  @Test func anEmptyFileIsADocumentToStartFromAndAMissingOneLeavesNothing() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("app.json")
      try CLI.write("", to: file)
      let set = try CLI.run(["set", file, "a", "1"])
      #expect(set.status == 0, "\(set.summary)")
      #expect(try CLI.run(["get", file, "a"]).standardOutput == "1\n")
      let blank = directory.file("blank.json")
      try CLI.write("  \n", to: blank)
      #expect(try CLI.run(["set", blank, "b", "true"]).status == 0)
      let delete = try CLI.run(["delete", directory.file("missing.json"), "a"])
      #expect(delete.status == 66, "\(delete.summary)")
      #expect(!FileManager.default.fileExists(atPath: directory.file("missing.json.lock")))
    }
  }

  /// Another process's write merged by a storage keeps the file's comments and layout.
  @Test func aLibraryMergeKeepsComments() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.jsonc")
      try CLI.write("{\n    // theme of the editor\n    \"theme\": \"light\",\n    \"fontSize\": 13, // points\n}\n", to: path)
      let storage = CodableStorage(defaultValue: SharedSettings(), path: path, updateMode: .manual, options: watchingOptions)
      #expect(storage.wrappedValue.theme == "light")
      #expect(try CLI.run(["set", path, "theme", "dark"]).status == 0)
      #expect(waitUntil { storage.wrappedValue.theme == "dark" })
      storage.wrappedValue.fontSize = 15
      try storage.save()
      let text = try String(contentsOfFile: path, encoding: .utf8)
      #expect(text.hasPrefix("{\n    // theme of the editor\n    \"theme\": \"dark\",\n    \"fontSize\": 15, // points\n"), "\(text)")
    }
  }

  /// A document past the size limit is refused by every reader before it is read whole, and
  /// never written over: a huge file cannot make each process watching it parse gigabytes.
  @Test func aDocumentPastTheSizeLimitIsRefusedBeforeItIsRead() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("big.json")
      try CLI.write("{\"pad\": \"" + String(repeating: "x", count: 5000) + "\"}\n", to: file)
      let limit = CLI.environment(["CCSYNC_MAX_DOCUMENT_SIZE": "4096"])
      let get = try CLI.run(["get", file, "pad"], environment: limit)
      #expect(get.status == 65 && get.standardError.contains("more than the 4096 a document may be"), "\(get.summary)")
      let before = CLI.bytes(file)
      let set = try CLI.run(["set", file, "a", "1"], environment: limit)
      #expect(set.status == 65, "\(set.summary)")
      #expect(CLI.bytes(file) == before)
      #expect(try CLI.run(["get", file, "a"]).status == 1, "under the default limit it reads")
    }
  }

  /// `StorageOptions(syntax: .jwcc)` reads a `.json` file with comments (editor settings are
  /// `.json` files with comments) and keeps them on every save.
  @Test func aStorageOptionReadsJWCCWhateverTheName() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      try CLI.write("{\n  // the theme\n  \"theme\": \"light\",\n}\n", to: path)
      let options = StorageOptions(flushesAtExit: false, logger: .silent, syntax: .jwcc)
      let storage = CodableStorage(defaultValue: SharedSettings(), path: path, updateMode: .manual, options: options)
      #expect(storage.wrappedValue.theme == "light" && storage.fileState == .valid)
      storage.wrappedValue.theme = "dark"
      try storage.save()
      #expect(try String(contentsOfFile: path, encoding: .utf8).hasPrefix("{\n  // the theme\n  \"theme\": \"dark\",\n"))
      let strict = CodableStorage(defaultValue: SharedSettings(), path: path, updateMode: .manual, options: watchingOptions)
      guard case .invalid(let message) = strict.fileState else { Issue.record("a strict storage read comments"); return }
      #expect(message.contains("comments are not JSON"), "\(message)")
    }
  }
}
