import Foundation
import Testing

/// Bad input gets a clear message naming the file, the documented exit status, and never
/// changes a file.
@Suite struct CLIBadInputTests {
  /// A FILE that is not a valid JSON document, how to make it, and the status expected.
  struct BadFile: CustomTestStringConvertible, Sendable {
    var name: String
    var status: Int32
    var message: String
    var make: @Sendable (String) throws -> Void

    var testDescription: String { name }
  }

  static let badFiles: [BadFile] = [
    BadFile(name: "NUL byte", status: 65, message: "is not valid JSON: unexpected character U+0000 at line 1, column 7") { path in
      try Data("{\"a\": \0}".utf8).write(to: URL(fileURLWithPath: path))
    },
    BadFile(name: "invalid UTF-8", status: 65, message: "is not valid JSON: invalid UTF-8 at line 2, column 9") { path in
      try Data([UInt8]("{\n  \"a\": \"".utf8) + [0xFF] + [UInt8]("\"}".utf8)).write(to: URL(fileURLWithPath: path))
    },
    BadFile(name: "trailing garbage", status: 65, message: "is not valid JSON: trailing characters") { path in
      try CLI.write("{\"a\": 1}\n}", to: path)
    },
    BadFile(name: "unexpected character", status: 65, message: "is not valid JSON: unexpected character 'x' at line 3, column 8") { path in
      try CLI.write("{\n  \"a\": 1,\n  \"b\": x\n}\n", to: path)
    },
    BadFile(name: "directory", status: 65, message: "is a directory, not a regular file") { path in
      try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
    },
    BadFile(name: "FIFO", status: 65, message: "is a FIFO, not a regular file") { path in
      #expect(mkfifo(path, 0o644) == 0)
    },
    BadFile(name: "dangling symlink", status: 66, message: "which does not exist") { path in
      try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: "nowhere.json")
    },
    BadFile(name: "symlink loop", status: 66, message: "too many levels of symbolic links") { path in
      let loop = URL(fileURLWithPath: path).deletingLastPathComponent().appendingPathComponent("loop.json").path
      try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: "loop.json")
      try FileManager.default.createSymbolicLink(atPath: loop, withDestinationPath: "config.json")
    },
  ]

  /// Each command that takes a FILE, with the rest of its arguments and its standard input.
  /// `FILE` stands for the file.
  static let commands: [(arguments: [String], input: String?)] = [
    (["get", "FILE", "a"], nil),
    (["load", "FILE"], nil),
    (["set", "FILE", "a", "2"], nil),
    (["delete", "FILE", "a"], nil),
    (["save", "FILE"], "{\"a\": 2}"),
    (["save", "--merge", "FILE"], "{\"a\": 2}"),
    (["edit", "FILE"], nil),
  ]

  @Test(arguments: badFiles)
  func badFileIsReportedAndLeftUntouched(_ bad: BadFile) throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("config.json")
      try bad.make(path)
      let before = try snapshot(directory)
      for command in Self.commands {
        let arguments = command.arguments.map { $0 == "FILE" ? path : $0 }
        // `edit` must fail before it starts an editor: `false` would make the status 1.
        let outcome = try CLI.run(arguments, input: command.input, environment: CLI.environment(["EDITOR": "false"]),
                                  deadline: .seconds(10))
        #expect(!outcome.timedOut, "\(arguments) hung")
        #expect(outcome.status == bad.status, "\(arguments): \(outcome.summary)")
        #expect(outcome.standardOutput == "", "\(arguments)")
        #expect(outcome.standardError.hasPrefix("ccsync: '\(path)'"), "\(arguments): \(outcome.summary)")
        #expect(outcome.standardError.contains(bad.message), "\(arguments): \(outcome.summary)")
        // The file and its directory are as they were (a lock file beside it is allowed).
        #expect(try snapshot(directory) == before, "\(arguments) changed something")
      }
    }
  }

  @Test func watchReportsABadFileOnStandardErrorOnly() throws {
    for bad in Self.badFiles {
      try withTemporaryDirectory { directory in
        let path = directory.file("config.json")
        try bad.make(path)
        let outcome = try CLI.run(["watch", "--timeout", "0.3", path], deadline: .seconds(10))
        #expect(outcome.status == 0 && outcome.standardOutput == "", "\(bad.name): \(outcome.summary)")
        #expect(outcome.standardError.contains(bad.message), "\(bad.name): \(outcome.summary)")
      }
    }
  }

  /// Names, kinds and bytes of everything in `directory` except lock files.
  private func snapshot(_ directory: TemporaryDirectory) throws -> [String: String] {
    var result: [String: String] = [:]
    for name in try directory.names() where !name.hasSuffix(".lock") {
      let path = directory.file(name)
      let attributes = try FileManager.default.attributesOfItem(atPath: path)
      let type = attributes[.type] as? FileAttributeType
      if type == .typeSymbolicLink {
        result[name] = "link:" + (try FileManager.default.destinationOfSymbolicLink(atPath: path))
      } else if type == .typeRegular {
        result[name] = "file:" + (CLI.bytes(path)?.base64EncodedString() ?? "?")
      } else {
        result[name] = "\(type?.rawValue ?? "?")"
      }
    }
    return result
  }

  /// `set` refuses, with 65 naming the limit, a VALUE that would nest the document deeper
  /// than the 512 levels every reader accepts: valid JSON 600 levels deep (with `--json` or
  /// without), and 512 levels under `a`, within the limit alone but not at that PATH. Before,
  /// the first was stored as a string and the second wrote a file no reader accepted. The
  /// file is untouched; 511 levels under `a` fit, and `--string` still stores the text.
  @Test func setRefusesAValueNestedDeeperThanTheLimit() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      let original = Data("{\"a\": 1}\n".utf8)
      try original.write(to: URL(fileURLWithPath: file))
      func nested(_ depth: Int) -> String { String(repeating: "[", count: depth) + String(repeating: "]", count: depth) }
      for arguments in [[file, "a", nested(600)], ["--json", file, "a", nested(600)], [file, "a", nested(512)]] {
        let outcome = try CLI.run(["set"] + arguments)
        #expect(outcome.status == 65 && outcome.standardError.contains("deeper than 512 levels"), "\(outcome.summary)")
        #expect(CLI.bytes(file) == original)
      }
      let fits = try CLI.run(["set", file, "a", nested(511)])
      #expect(fits.status == 0, "\(fits.summary)")
      #expect(try CLI.run(["get", "-c", file, "a"]).standardOutput == nested(511) + "\n")
      let text = try CLI.run(["set", "--string", file, "s", nested(600)])
      #expect(text.status == 0, "\(text.summary)")
      #expect(try CLI.run(["get", "-r", file, "s"]).standardOutput == nested(600) + "\n")
    }
  }

  /// `delete FILE ""` (an unset variable for PATH) and `delete FILE .` are usage errors, 64,
  /// as `set FILE ""` is, the file untouched; before, they were 65, "cannot remove the whole
  /// document".
  @Test(arguments: ["", "."]) func deleteOfTheWholeDocumentIsAUsageError(path: String) throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      let original = Data("{\"a\": 1}\n".utf8)
      try original.write(to: URL(fileURLWithPath: file))
      let outcome = try CLI.run(["delete", file, path])
      expectUsageError(outcome, command: "delete", token: ".")
      #expect(outcome.standardError.contains(path.isEmpty ? "The path is empty" : "The path '.' is the whole document"), "\(outcome.summary)")
      #expect(CLI.bytes(file) == original)
    }
  }
}

/// Permissions and full disks, which need a non-root user (setpriv) or a mount.
@Suite(.serialized) struct CLIPermissionTests {
  @Test func unreadableFileIsPermissionDenied() throws {
    _ = try FaultTools.tool("setpriv")
    try withTemporaryDirectory { directory in
      #expect(chmod(directory.path, 0o755) == 0)
      let file = directory.file("secret.json")
      try CLI.write("{\"a\": 1}\n", to: file)
      #expect(chmod(file, 0o600) == 0)
      let outcome = try CLI.runAsNobody(["get", file, "a"])
      #expect(outcome.status == 77, "\(outcome.summary)")
      #expect(outcome.standardError.contains(file) && outcome.standardError.contains("Permission denied"))
    }
  }

  @Test func unwritableDirectoryCannotCreate() throws {
    _ = try FaultTools.tool("setpriv")
    try withTemporaryDirectory { directory in
      #expect(chmod(directory.path, 0o755) == 0)
      let file = directory.file("config.json")
      try CLI.write("{\"a\": 1}\n", to: file)
      #expect(chmod(file, 0o666) == 0)
      let before = CLI.bytes(file)
      // No lock file yet: creating it is refused.
      let noLock = try CLI.runAsNobody(["set", file, "a", "2"])
      #expect(noLock.status == 73, "\(noLock.summary)")
      #expect(noLock.standardError.contains("cannot create '\(file).lock'"))
      // With a lock file, creating the temp file is refused.
      #expect(FileManager.default.createFile(atPath: file + ".lock", contents: nil))
      let noTemp = try CLI.runAsNobody(["set", file, "a", "2"])
      #expect(noTemp.status == 73, "\(noTemp.summary)")
      #expect(noTemp.standardError.contains("cannot create") && noTemp.standardError.contains(".config.json.tmp-"))
      let newFile = try CLI.runAsNobody(["save", directory.file("new.json")], input: "{}")
      #expect(newFile.status == 73, "\(newFile.summary)")
      #expect(CLI.bytes(file) == before)
      #expect(try directory.names() == ["config.json", "config.json.lock"])
    }
  }

  @Test func fullFileSystemIsAnInputOutputError() throws {
    try withTemporaryFileSystem(size: "64k") { mountPoint in
      let file = mountPoint + "/config.json"
      try CLI.write("{\"a\": 1}\n", to: file)
      // Fill the file system: a file of 64 KiB cannot be written, so write what fits.
      _ = try ChildProcess.run("dd", ["if=/dev/zero", "of=\(mountPoint)/fill", "bs=1k", "count=128"])
      let before = CLI.bytes(file)
      let outcome = try CLI.run(["set", file, "a", "\"" + String(repeating: "x", count: 8192) + "\""])
      #expect(outcome.status == 74, "\(outcome.summary)")
      #expect(outcome.standardError.contains("No space left on device") && outcome.standardError.contains(file))
      #expect(CLI.bytes(file) == before)
      let names = try FileManager.default.contentsOfDirectory(atPath: mountPoint).sorted()
      #expect(names == ["config.json", "config.json.lock", "fill"], "a temp file was left behind: \(names)")
    }
  }

  /// Output that cannot be written (a full device) is an I/O error, 74, named on standard
  /// error; before, the bytes were dropped and the status was 0.
  @Test(arguments: [["get", "FILE", "a"], ["load", "FILE"]])
  func standardOutputThatCannotBeWrittenIsAnInputOutputError(arguments: [String]) throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      try CLI.write("{\"a\": 1}\n", to: file)
      let outcome = try ChildProcess.run(
        "/bin/sh", ["-c", "exec \"$@\" > /dev/full", "sh", CLI.executable()] + arguments.map { $0 == "FILE" ? file : $0 })
      #expect(outcome.status == 74, "\(outcome.summary)")
      #expect(outcome.standardError.contains("write error on standard output: No space left on device"), "\(outcome.summary)")
    }
  }

  /// `stress` on a FILE starting with a dash (its workers get it after `--`), and on a
  /// counter already at the largest integer (a data error, 65, not a crash).
  @Test func stressTakesADashFileAndRefusesToOverflow() throws {
    try withTemporaryDirectory { directory in
      let dashed = try ChildProcess.run(
        "/bin/sh", ["-c", "cd \"$0\" && exec \"$1\" stress --processes 2 --iterations 3 -- -dash.json", directory.path, CLI.executable()])
      #expect(dashed.status == 0, "\(dashed.summary)")
      #expect(try CLI.run(["get", directory.file("-dash.json"), "counter"]).standardOutput == "6\n")
      let full = directory.file("full.json")
      try CLI.write("{\"counter\": 9223372036854775807}\n", to: full)
      let overflow = try CLI.run(["stress", "--processes", "1", "--iterations", "1", full])
      #expect(overflow.status == 65, "\(overflow.summary)")
      #expect(CLI.bytes(full) == Data("{\"counter\": 9223372036854775807}\n".utf8), "changed")
    }
  }

  /// `set FILE "" VALUE` (an unset variable for PATH) is refused with 64, the file untouched;
  /// `.` still replaces the whole document on purpose.
  @Test func setWithAnEmptyPathIsRefusedAndDotReplacesTheDocument() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      try CLI.write("{\"a\": 1}\n", to: file)
      let empty = try CLI.run(["set", file, "", "5"])
      #expect(empty.status == 64 && empty.standardError.contains("The path is empty"), "\(empty.summary)")
      #expect(CLI.bytes(file) == Data("{\"a\": 1}\n".utf8))
      let dot = try CLI.run(["set", file, ".", "{\"b\": 2}"])
      #expect(dot.status == 0, "\(dot.summary)")
      #expect(try CLI.run(["get", file, "b"]).standardOutput == "2\n")
    }
  }

  /// An argument that is not valid UTF-8 (a value, or a file name in another encoding) is a
  /// usage error naming its position; it used to become U+FFFD, storing another value or
  /// naming another file.
  @Test func argumentsThatAreNotUTF8AreRefused() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("u.json")
      try CLI.write("{\"k\": 1}\n", to: file)
      let value = try ChildProcess.run("/bin/sh", ["-c", "exec \"$0\" set \"$1\" k \"$(printf 'a\\377b')\"", try CLI.executable(), file])
      #expect(value.status == 64 && value.standardError.contains("Argument 4 is not valid UTF-8"), "\(value.summary)")
      let path = try ChildProcess.run("/bin/sh", ["-c", "exec \"$0\" get \"$1/$(printf '\\351').json\"", try CLI.executable(), directory.path])
      #expect(path.status == 64 && path.standardError.contains("Argument 2 is not valid UTF-8"), "\(path.summary)")
      #expect(CLI.bytes(file) == Data("{\"k\": 1}\n".utf8))
    }
  }
}
