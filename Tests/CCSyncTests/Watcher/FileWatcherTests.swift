import Foundation
import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

/// Foreign writers, run as real processes, each changing a watched file its own way. For
/// each: the watch is woken and sees the final content, side files wake nothing, and the
/// watch still works afterwards.
@Suite(.serialized) struct FileWatcherTests {
  /// A writer that changes `app.json` from `one` to `two` its own way.
  struct ForeignWriter: Sendable, CustomTestStringConvertible {
    let name: String
    var setup = "echo one > app.json"
    let script: String
    /// What the wake-up reasons must show, when the writer's kind of write is known.
    var reasonsHold: (@Sendable ([FileWatchReason]) -> Bool)?
    var testDescription: String { name }
  }

  static let writers = [
    ForeignWriter(name: "shell redirection (in place)", script: "echo two > app.json",
                  reasonsHold: { $0.contains(.directoryEvent(inPlaceWrite: true)) }),
    ForeignWriter(name: "cp (in place)", setup: "echo one > app.json; mkdir other; echo two > other/source",
                  script: "cp other/source app.json"),
    ForeignWriter(name: "sed -i (rename over)", script: "sed -i s/one/two/ app.json"),
    ForeignWriter(name: "rename replace", script: "echo two > .app.json.tmp-Ab12cd && mv .app.json.tmp-Ab12cd app.json",
                  reasonsHold: { $0.allSatisfy { !$0.contentMayChangeInPlace } }),
    // :set backupcopy=no: probe the directory, rename the file away, write a new one.
    ForeignWriter(name: "vim without backupcopy", script: """
      echo swap > .app.json.swp; : > 4913; rm 4913
      mv app.json app.json~; echo two > app.json; rm app.json~; rm .app.json.swp
      """),
    // :set backupcopy=yes: copy the file to the backup, then truncate and write in place.
    ForeignWriter(name: "vim with backupcopy", script: """
      echo swap > .app.json.swp; : > 4913; rm 4913
      cp app.json app.json~; echo two > app.json; rm app.json~; rm .app.json.swp
      """),
    ForeignWriter(name: "emacs", script: """
      ln -s user@host.1234:1700000000 .#app.json; echo auto > '#app.json#'
      cp -p app.json app.json~; echo two > app.json.new; mv app.json.new app.json
      rm '#app.json#' .#app.json
      """),
  ]

  @Test(arguments: writers)
  func foreignWriterIsSeenAndTheWatchStaysAlive(_ writer: ForeignWriter) throws {
    let scenario = try WatchScenario()
    try scenario.sh(writer.setup)
    let log = scenario.watch("app.json")
    try scenario.sh(writer.script)
    #expect(log.waitForContent("two\n"))
    if let reasonsHold = writer.reasonsHold { #expect(reasonsHold(log.reasons), "\(log.reasons)") }
    try scenario.expectAlive(log)
  }

  @Test func jqThroughSponge() throws {
    let scenario = try WatchScenario()
    try scenario.sh(#"echo '{"v":1}' > app.json"#)
    let log = scenario.watch("app.json")
    if ChildProcess.find("sponge") != nil {
      try scenario.sh("jq -c '.v = 2' app.json | sponge app.json")
    } else {
      // sponge (moreutils) absent: the same syscalls, soak everything up then write in place.
      try scenario.sh("jq -c '.v = 2' app.json | (cat > ../sponge-$$; cat ../sponge-$$ > app.json; rm ../sponge-$$)")
    }
    #expect(log.waitForContent("{\"v\":2}\n"))
    try scenario.expectAlive(log)
  }


  @Test func deleteThenRecreate() throws {
    let scenario = try WatchScenario()
    try scenario.sh("echo one > app.json")
    let log = scenario.watch("app.json")
    try scenario.sh("rm app.json")
    #expect(log.waitForContent(nil))
    let before = log.count
    try scenario.sh("echo two > app.json")
    #expect(log.waitForContent("two\n", after: before))
    try scenario.expectAlive(log)
  }

  @Test func missingFileAndDirectoriesAppear() throws {
    let scenario = try WatchScenario()
    let log = scenario.watch("a/b/app.json")
    #expect(scenario.watcher.watchedDirectoryCount == 1)  // The temp directory itself.
    try scenario.sh("mkdir -p a/b && echo two > a/b/app.json")
    #expect(log.waitForContent("two\n"))
    #expect(waitUntil(deadline: .seconds(5)) { scenario.watcher.watchedDirectoryCount == 1 })  // Now a/b only.
    try scenario.expectAlive(log)
  }

  @Test func sideFilesWakeNothing() throws {
    let scenario = try WatchScenario()
    try scenario.sh("echo one > app.json")
    let log = scenario.watch("app.json")
    let probe = scenario.watch("probe")
    try scenario.expectNoWake(log, probe: probe, during: """
      : > 4913; rm 4913; echo x > app.json~; rm app.json~; echo x > .app.json.swp; echo x > .app.json.swx
      ln -s lock .#app.json; rm .#app.json; echo x > '#app.json#'; rm '#app.json#'
      echo x > .app.json.tmp-Zz9911; mv .app.json.tmp-Zz9911 .app.json.tmp-Yy8822; rm .app.json.tmp-Yy8822
      : > app.json.lock; echo x > app.json.corrupt-20261129T101010; chmod 600 app.json.lock
      echo x > other.json; mkdir app.jsonx; rmdir app.jsonx
      """, "side files woke the watch")
    try scenario.expectAlive(log)
  }

  @Test func directoryMovedAwayAndRecreated() throws {
    let scenario = try WatchScenario()
    try scenario.sh("mkdir d && echo one > d/app.json")
    let log = scenario.watch("d/app.json")
    try scenario.sh("mv d d-old")
    #expect(log.waitForContent(nil))
    let before = log.count
    try scenario.sh("mkdir d && echo two > d/app.json")
    #expect(log.waitForContent("two\n", after: before))
    // The old directory is not watched any more.
    let probe = scenario.watch("d-old/probe")
    try scenario.expectNoWake(log, probe: probe, during: "echo stale > d-old/app.json",
                              "writes in the moved-away directory woke the watch")
    try scenario.expectAlive(log)
  }

  @Test func directoryDeletedAndRecreated() throws {
    let scenario = try WatchScenario()
    try scenario.sh("mkdir d && echo one > d/app.json")
    let log = scenario.watch("d/app.json")
    try scenario.sh("rm -rf d")
    #expect(log.waitForContent(nil))
    let before = log.count
    try scenario.sh("mkdir d && echo two > d/app.json")
    #expect(log.waitForContent("two\n", after: before))
    try scenario.expectAlive(log)
    try scenario.sh("rm -rf d; mkdir -p d; echo three > d/app.json")
    #expect(log.waitForContent("three\n"))
    try scenario.expectAlive(log)
  }
}
