import Foundation
import Testing

@testable import CCSyncCLI

/// Help, version and the command-line conventions every `ccsync` command shares.
@Suite struct CLIOptionsTests {
  static let commands = CommandRegistry.visibleSpecs.map(\.name)

  @Test(arguments: commands)
  func everyCommandHasHelp(_ command: String) throws {
    for arguments in [[command, "--help"], [command, "-h"], ["help", command], [command, "x.json", "-h"]] {
      let outcome = try CLI.run(arguments)
      #expect(outcome.status == 0 && outcome.standardError == "", "\(arguments): \(outcome.summary)")
      let text = outcome.standardOutput
      #expect(text.hasPrefix("OVERVIEW: "), "\(arguments)")
      #expect(text.contains("\nUSAGE: ccsync \(command)"), "\(arguments)")
      #expect(text.contains("\nOPTIONS:\n"), "\(arguments)")
      #expect(text.contains("-h, --help"), "\(arguments)")
    }
  }

  @Test func topLevelHelpAndVersion() throws {
    for arguments in [["--help"], ["-h"], ["help"], []] {
      let outcome = try CLI.run(arguments)
      #expect(outcome.status == 0 && outcome.standardError == "", "\(outcome.summary)")
      #expect(outcome.standardOutput.hasPrefix("OVERVIEW: "))
      #expect(outcome.standardOutput.contains("\nSUBCOMMANDS:\n"))
      for command in Self.commands {
        #expect(outcome.standardOutput.contains("\n  \(command) "), "\(command) missing from top-level help")
      }
      #expect(!outcome.standardOutput.contains("stress-worker"))
    }
    let version = try CLI.run(["--version"])
    #expect(version.status == 0 && version.standardOutput.hasPrefix("ccsync ") && version.standardError == "")
  }

  @Test func usageErrorsNameTheOffendingToken() throws {
    expectUsageError(try CLI.run(["get", "--foo", "x.json"]), command: "get", token: "--foo")
    expectUsageError(try CLI.run(["get", "-z", "x.json"]), command: "get", token: "-z")
    expectUsageError(try CLI.run(["get"]), command: "get", token: "<file>")
    expectUsageError(try CLI.run(["set", "x.json", "a"]), command: "set", token: "<value>")
    expectUsageError(try CLI.run(["get", "x.json", "a", "b"]), command: "get", token: "b")
    expectUsageError(try CLI.run(["set", "x.json", "a", "1", "--wait"]), command: "set", token: "--wait <secs>")
    expectUsageError(try CLI.run(["set", "--wait=soon", "x.json", "a", "1"]), command: "set", token: "soon")
    expectUsageError(try CLI.run(["get", "--raw=yes", "x.json"]), command: "get", token: "--raw")
    expectUsageError(try CLI.run(["watch", "--count", "0", "x.json"]), command: "watch", token: "0")
    expectUsageError(try CLI.run(["lock", "x.json"]), command: "lock", token: "<command>")
    expectUsageError(try CLI.run(["watch", "--exec", "x.json"]), command: "watch", token: "<command>")
    expectUsageError(try CLI.run(["stress", "--processes", "-2", "x.json"]), command: "stress", token: "-2")

    let unknown = try CLI.run(["frobnicate"])
    #expect(unknown.status == 64)
    #expect(unknown.standardError.hasPrefix("Error: Unknown subcommand 'frobnicate'\nUsage: ccsync <subcommand>\n"))
    let unknownHelp = try CLI.run(["help", "frobnicate"])
    #expect(unknownHelp.status == 64 && unknownHelp.standardError.contains("'frobnicate'"))
  }

  @Test func optionsMayComeAnywhereAndTakeValuesEitherWay() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      try CLI.write("{\"a\": {\"b\": \"x\"}}\n", to: file)
      for arguments in [["get", "-r", file, "a.b"], ["get", file, "-r", "a.b"], ["get", file, "a.b", "--raw"],
                        ["get", "-rc", file, "a.b"], ["get", "--raw", "--", file, "a.b"]] {
        let outcome = try CLI.run(arguments)
        #expect(outcome.status == 0 && outcome.standardOutput == "x\n", "\(arguments): \(outcome.summary)")
      }
      for arguments in [["set", "--wait=1", file, "n", "1"], ["set", "--wait", "1", file, "n", "1"],
                        ["set", file, "n", "1", "-w", "1"], ["set", "-w1", file, "n", "1"], ["set", "-nj", file, "n", "1"]] {
        let outcome = try CLI.run(arguments)
        #expect(outcome.status == 0, "\(arguments): \(outcome.summary)")
      }
      // `--` ends options: a value that looks like an option is stored as it is.
      #expect(try CLI.run(["set", file, "--", "flag", "--force"]).status == 0)
      #expect(try CLI.run(["get", "-r", file, "flag"]).standardOutput == "--force\n")
      // Negative numbers are operands.
      #expect(try CLI.run(["set", file, "n", "-1.5"]).status == 0)
      #expect(try CLI.run(["get", file, "n"]).standardOutput == "-1.5\n")
    }
  }
}
