import Foundation
import Testing

@testable import CCSyncCLI

/// The one list of commands: every registered command is dispatched, has help, is in the
/// top-level help, the completions of each shell and the man page, with every option it
/// declares; and nothing is listed that is not registered.
@Suite struct CLIRegistryTests {
  static let visible = CommandRegistry.visibleSpecs.map(\.name)

  @Test func everyCommandIsRegisteredOnce() {
    let names = CommandRegistry.commands.map { $0.spec.name }
    #expect(Set(names).count == names.count, "\(names)")
    for name in ["get", "load", "set", "delete", "save", "edit", "watch", "lock", "mirror", "stress", "demo", "completion", "manpage", "version", "help"] {
      #expect(names.contains(name), "\(name) is not registered")
    }
  }

  @Test(arguments: CommandRegistry.commands.map { $0.spec.name })
  func everyCommandHasHelpAndIsListed(_ name: String) throws {
    let spec = try #require(CommandRegistry.command(named: name)).spec
    let help = try CLI.run([name, "--help"])
    #expect(help.status == 0 && help.standardError == "", "\(help.summary)")
    #expect(help.standardOutput.contains("USAGE: ccsync \(name)"))
    for option in spec.options {
      #expect(help.standardOutput.contains("--\(option.long)"), "'\(name) --help' lacks --\(option.long)")
    }
    let top = try CLI.run(["--help"]).standardOutput
    #expect(top.contains("\n  \(name) ") == !spec.isHidden, "top-level help and '\(name)'")
  }

  @Test func completionsOfEveryShellHoldEveryCommandAndOption() throws {
    for shell in ["bash", "zsh", "fish"] {
      let outcome = try CLI.run(["completion", shell])
      #expect(outcome.status == 0 && outcome.standardError == "", "\(shell): \(outcome.summary)")
      for spec in CommandRegistry.visibleSpecs {
        #expect(outcome.standardOutput.contains(spec.name), "\(shell) completion lacks \(spec.name)")
        for option in spec.options {
          #expect(outcome.standardOutput.contains(option.long), "\(shell) completion lacks \(spec.name) --\(option.long)")
        }
      }
      #expect(!outcome.standardOutput.contains("stress-worker"))
    }
    expectUsageError(try CLI.run(["completion", "tcsh"]), command: "completion", token: "tcsh")
  }

  @Test func theManualPageHoldsEveryCommandOptionAndStatus() throws {
    let outcome = try CLI.run(["manpage"])
    #expect(outcome.status == 0 && outcome.standardError == "")
    let page = outcome.standardOutput
    #expect(page.hasPrefix(".TH CCSYNC 1 "))
    for spec in CommandRegistry.visibleSpecs {
      #expect(page.contains(".SS \"ccsync \(spec.name)"), "man page lacks \(spec.name)")
      for option in spec.options {
        #expect(page.contains("\\-\\-\(option.long.replacingOccurrences(of: "-", with: "\\-"))"), "man page lacks \(spec.name) --\(option.long)")
      }
    }
    for section in [".SH EXIT STATUS", ".SH ENVIRONMENT", ".SH FILES", "ETCDCTL_ENDPOINTS", ".B 77"] {
      #expect(page.contains(section))
    }
  }

  /// groff renders the page with every warning turned on and prints none.
  @Test func groffRendersTheManualPageWithoutWarnings() throws {
    guard let groff = ["/usr/bin/groff", "/bin/groff"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
      try Test.cancel("groff is not installed (scripts/test installs it)")
    }
    try withTemporaryDirectory { directory in
      let page = directory.file("ccsync.1")
      try CLI.run(["manpage"]).standardOutput.write(toFile: page, atomically: true, encoding: .utf8)
      let rendered = try ChildProcess.run(groff, ["-ww", "-man", "-Tutf8", page])
      #expect(rendered.status == 0, "\(rendered.summary)")
      #expect(rendered.standardError == "", "groff warned: \(rendered.standardError)")
      #expect(rendered.standardOutput.contains("CCSYNC(1)"))
    }
  }

  /// The bash script, loaded into a real bash, answers as a person typing would see.
  @Test func bashCompletesCommandsOptionsValuesAndEtcdURLs() throws {
    try withTemporaryDirectory { directory in
      let script = directory.file("ccsync.bash")
      try CLI.run(["completion", "bash"]).standardOutput.write(toFile: script, atomically: true, encoding: .utf8)
      try "{}".write(toFile: directory.file("settings.json"), atomically: true, encoding: .utf8)
      func candidates(_ line: String) throws -> [String] {
        let driver = """
          cd '\(directory.path)'
          source '\(script)'
          COMP_LINE=$1; COMP_POINT=${#COMP_LINE}
          read -r -a COMP_WORDS <<< "$COMP_LINE"; [[ $COMP_LINE == *' ' ]] && COMP_WORDS+=('')
          COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
          _ccsync
          printf '%s\\n' "${COMPREPLY[@]}"
          """
        let outcome = try ChildProcess.run(
          "/bin/bash", ["--norc", "-c", driver, "bash", line],
          environment: CLI.environment(["ETCDCTL_ENDPOINTS": "10.0.0.1:2379,https://h2:2379"]))
        #expect(outcome.status == 0 && outcome.standardError == "", "\(line): \(outcome.summary)")
        return outcome.standardOutput.split(separator: "\n").map(String.init).sorted()
      }
      #expect(try candidates("ccsync ge") == ["get"])
      #expect(try candidates("ccsync mi") == ["mirror"])
      #expect(try candidates("ccsync watch --sig") == ["--signal"])
      #expect(try candidates("ccsync watch --signal ").contains("HUP"))
      #expect(try candidates("ccsync mirror --prefer ") == ["file", "key"])
      #expect(try candidates("ccsync get sett") == ["settings.json"])
      // Bash splits a word at ':', so the reply is the rest after the last ':' typed.
      #expect(try candidates("ccsync get etcd://1") == ["//10.0.0.1:2379/"])
      #expect(try candidates("ccsync get etcd://10.0.0.1:2") == ["2379/"])
      #expect(try candidates("ccsync completion ") == ["bash", "fish", "zsh"])
      #expect(try candidates("ccsync help st") == ["status", "stress"])
      #expect(try candidates("ccsync help stre") == ["stress"])
      #expect(try candidates("ccsync help zz").isEmpty)
    }
  }

  /// docs/CLI.md is written by hand: it must name every registered command and option.
  @Test func theReferenceDocumentsEveryCommandAndOption() throws {
    let reference = try String(contentsOf: packageRoot.appendingPathComponent("docs/CLI.md"), encoding: .utf8)
    for spec in CommandRegistry.visibleSpecs {
      #expect(reference.contains("`ccsync \(spec.name)"), "docs/CLI.md does not name ccsync \(spec.name)")
      for option in spec.options {
        #expect(reference.contains("--\(option.long)"), "docs/CLI.md does not name \(spec.name) --\(option.long)")
      }
    }
  }

  @Test func mistypedCommandsAndOptionsGetASuggestion() throws {
    let command = try CLI.run(["gte", "x.json"])
    #expect(command.status == 64)
    #expect(command.standardError.hasPrefix("Error: Unknown subcommand 'gte'; did you mean 'get'?\n"), "\(command.summary)")
    let option = try CLI.run(["set", "--strng", "x.json", "a", "1"])
    expectUsageError(option, command: "set", token: "--strng")
    #expect(option.standardError.contains("did you mean '--string'?"))
    let far = try CLI.run(["frobnicate"])
    #expect(far.status == 64 && !far.standardError.contains("did you mean"))
    let help = try CLI.run(["help", "mirorr"])
    #expect(help.status == 64 && help.standardError.contains("did you mean 'mirror'?"))
  }

  @Test func versionAnswersThreeWays() throws {
    for arguments in [["--version"], ["-V"], ["version"]] {
      let outcome = try CLI.run(arguments)
      #expect(outcome.status == 0 && outcome.standardError == "", "\(arguments): \(outcome.summary)")
      #expect(outcome.standardOutput == "ccsync \(Help.version)\n")
    }
  }

  @Test func exclusiveOptionsAreRefusedByTheParser() throws {
    expectUsageError(try CLI.run(["set", "-s", "-j", "x.json", "a", "1"]), command: "set", token: "--string")
    expectUsageError(try CLI.run(["lock", "-s", "-x", "x.json", "true"]), command: "lock", token: "--shared")
    expectUsageError(try CLI.run(["watch", "--exec", "--restart", "x.json", "--", "true"]), command: "watch", token: "--exec")
  }

  /// README's old example put watch's own options after `--`, where they go to the command.
  @Test func watchOptionsAfterTheCommandsDashesAreRefused() throws {
    for misplaced in [["--restart"], ["--signal", "HUP"], ["--exec"], ["--debounce=1"]] {
      let outcome = try CLI.run(["watch", "x.json", "server", "--", "./reload.sh"] + misplaced)
      expectUsageError(outcome, command: "watch", token: misplaced[0])
    }
    // An explicit mode passes such words on to the command.
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      try CLI.write("{\"a\": 1}\n", to: file)
      let outcome = try CLI.run(["watch", "--count", "1", "--exec", file, "a", "--", "echo", "--restart"])
      #expect(outcome.status == 0, "\(outcome.summary)")
      #expect(outcome.standardOutput.contains("--restart"))
    }
  }

  @Test func aLockWaitThatRunsOutSaysItTimedOut() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      try CLI.write("{}\n", to: file)
      let holder = try FlockHolder(lockFile: file + ".lock", in: directory)
      defer { holder.stop() }
      let timed = try CLI.run(["set", "-w", "0.3", file, "a", "1"])
      #expect(timed.status == 1)
      #expect(timed.standardError.contains("timed out after 0.3 s waiting for the lock"), "\(timed.summary)")
      let atOnce = try CLI.run(["set", "-n", file, "a", "1"])
      #expect(atOnce.status == 1)
      #expect(atOnce.standardError.contains("is locked by another process"), "\(atOnce.summary)")
      let lock = try CLI.run(["lock", "-w", "0.2", file, "true"])
      #expect(lock.status == 1 && lock.standardError.contains("timed out after 0.2 s"), "\(lock.summary)")
    }
  }
}
