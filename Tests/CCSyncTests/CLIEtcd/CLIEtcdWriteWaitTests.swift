import Foundation
import Testing

extension CLIEtcdTests {
  /// `-w SECS` on a write to a key bounds the whole write, its calls and the retries between
  /// them (docs/CLI.md, "etcd keys"); without it each call has the client's 5 s deadline.
  @Suite struct WriteWait {
    /// No member listens: connections are refused at once. Before, the write gave up at its
    /// first call whatever `-w` said (its read never got the wait's deadline, and a round of
    /// refused endpoints ended the call); now it tries again until SECS have passed.
    @Test func aWaitIsHowLongAWriteKeepsTryingAClusterWithNoMember() throws {
      let ports = try EtcdCluster.freePorts(2)
      let url = "etcd://127.0.0.1:\(ports[0]),127.0.0.1:\(ports[1])/cfg/app"
      for arguments in [["set", "-w", "3", url, "a", "1"], ["delete", "--wait", "3", url, "a"]] {
        let (outcome, seconds) = try timed { try CLI.run(arguments, deadline: .seconds(30)) }
        #expect(outcome.status == 69, "\(arguments): \(outcome.summary)")
        for port in ports { #expect(outcome.standardError.contains("127.0.0.1:\(port)"), "\(arguments): \(outcome.summary)") }
        #expect(outcome.standardError.contains("no member answered in the 3 s the write was given"), "\(outcome.summary)")
        #expect(seconds >= 2.5, "\(arguments) gave up after \(seconds) s")
        #expect(seconds < 10, "\(arguments) took \(seconds) s")
      }
      // Without -w the first call that no member answers ends the write, as before.
      let (plain, seconds) = try timed { try CLI.run(["set", url, "a", "1"], deadline: .seconds(30)) }
      #expect(plain.status == 69, "\(plain.summary)")
      #expect(!plain.standardError.contains("the write was given"), "\(plain.summary)")
      #expect(seconds < 2.5, "a write without -w took \(seconds) s")
    }
  }
}
