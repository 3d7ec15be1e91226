import Foundation
import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

/// Another process saving steadily (200 saves, 5 ms apart) reaches this process's value: the
/// last save is heard, and no change is heard before its writer made it. How long that takes
/// is measured by the benchmark (`bench/run --only propagation`, BENCHMARKS.md section 2), not
/// here. Serialized: two writers at once would only load the machine.
@Suite(.serialized) struct LiveReloadSteadyWriterTests {
  @Test(arguments: [1024, 100 * 1024])
  func everySaveUpToTheLastIsHeard(bytes: Int) throws {
    try withTemporaryDirectory { directory in
      guard let heard = try observeTimedSaves(in: directory.path, bytes: bytes, saves: 200, interval: .milliseconds(5)) else {
        Issue.record("the last of 200 saves of \(bytes) bytes was not heard")
        return
      }
      #expect(heard.count > 0)
      #expect(heard.allSatisfy { $0.receivedAt > $0.sentAt }, "a change heard before it was stamped")
    }
  }
}
