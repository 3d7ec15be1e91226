import Foundation
import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

/// How long another process's save takes to reach this process's value: a printed
/// measurement (p50, p99), with only a loose sanity bound asserted. Serialized so the two
/// sizes do not compete for the CPU with each other.
@Suite(.serialized) struct LiveReloadLatencyTests {
  @Test(arguments: [1024, 100 * 1024])
  func propagationDelay(bytes: Int) throws {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let result = try measurePropagation(in: directory.path, bytes: bytes, saves: 200, interval: .milliseconds(5))
    guard let result else {
      Issue.record("the last of 200 saves of \(bytes) bytes was not heard")
      return
    }
    print("live-reload propagation, \(bytes / 1024) KB document: \(result)")
    #expect(result.delays.count > 0)
    #expect(result.delays.allSatisfy { $0 > 0 }, "a change heard before it was stamped")
    #expect(result.percentile(0.5) < 1000, "p50 over a second: \(result)")
  }
}
