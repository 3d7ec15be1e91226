import Foundation
import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

/// A read of a regular file stops once it has the size `fstat` gave, without a last `read`
/// that returns 0, and still reads a file whose `fstat` size is wrong to its end.
@Suite struct ReadSystemCallTests {
  /// One exact update reads the data file with one `read` call, as strace sees it.
  @Test func updateReadsTheDataFileWithOneCall() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      let text = #"{"counter": 1, "note": "\#(String(repeating: "n", count: 5000))"}"#
      try Data(text.utf8).write(to: URL(fileURLWithPath: path))

      let run = try runHelperTraced(["update-once", path], strace: ["-e", "trace=openat,read,close"], keepTrace: true)

      #expect(run.helper.standardOutput.contains("updated 2"), "\(run.helper.standardOutput) \(run.helper.standardError)")
      let lines = run.trace.split(separator: "\n").map(String.init)
      let open = try #require(lines.firstIndex { $0.contains("openat(") && $0.contains("\"\(path)\"") }, "\(run.trace)")
      let descriptor = try #require(lines[open].split(separator: "=").last?.trimmingCharacters(in: .whitespaces))
      let reads = lines[(open + 1)...].prefix { !$0.contains("close(\(descriptor))") }.filter { $0.contains("read(\(descriptor),") }
      #expect(reads.count == 1, "\(reads)")
      #expect(reads.first?.hasSuffix("= \(text.utf8.count)") == true, "\(reads)")
    }
  }

  /// `/proc` files say their size is 0: the read goes on to the true end.
  @Test func fileWithAWrongSizeIsReadToItsEnd() throws {
    let path = "/proc/self/cmdline"
    #expect(try statusOf(path).st_size == 0)
    let expected = try contents(of: path)

    let snapshot = try #require(try SharedFile(path: path).read())

    #expect(!expected.isEmpty)
    #expect(snapshot.bytes == expected)
  }
}
