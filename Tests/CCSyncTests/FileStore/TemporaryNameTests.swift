import Foundation
import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

/// What a locked update does besides the protocol's own system calls, kept few: the temp
/// file's random name comes from bytes drawn in batches, not a `getrandom` per save.
@Suite struct TemporaryNameTests {
  /// 64 relaxed updates by one process (strace counting its calls): as many renames, and
  /// four `getrandom` calls for their names (one per 16) besides the few the runtime makes
  /// at start-up (four here); a call per name made 64 and more.
  @Test func randomNamesAreDrawnInBatches() throws {
    let strace = try FaultTools.strace()
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      let trace = directory.file("trace")
      let helper = try ChildProcess.start(
        strace, ["-f", "-e", "trace=getrandom,rename", "-o", trace, try testHelper(), "increment", path, "64", "relaxed"])
      let outcome = helper.wait()
      #expect(outcome.status == 0, "\(helper.standardError)")
      let lines = try String(contentsOfFile: trace, encoding: .utf8).split(separator: "\n")
      let renames = lines.filter { $0.contains("rename(") && $0.contains("= 0") }.count
      let draws = lines.filter { $0.contains("getrandom(") }.count
      #expect(renames == 64, "\(lines.joined(separator: "\n"))")
      #expect(draws <= 12, "\(draws) getrandom calls for 64 saves")
    }
  }

  /// The suffixes stay what the leftover cleaner recognises, and differ.
  @Test func suffixesAreLettersAndDigitsAndDiffer() {
    let suffixes = (0..<2000).map { _ in FileSystem.randomSuffix(length: AtomicReplace.suffixLength) }
    #expect(Set(suffixes).count == suffixes.count)
    for suffix in suffixes.prefix(200) {
      #expect(AtomicReplace.isTemporaryName(".settings.json.tmp-" + suffix, forName: "settings.json"), "\(suffix)")
    }
  }
}
