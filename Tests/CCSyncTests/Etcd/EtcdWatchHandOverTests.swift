import Foundation
import Testing
@testable import CCSync
@testable import CCSyncEtcd
import CCSyncJSON
import CCSyncSystem

extension EtcdTests {
  /// An etcd key's watch thread looks at a change itself, so no thread is woken between the
  /// event and the observers, and hands its stream over to a standby when a subscriber blocks
  /// (`SharedKeyWatch`, `LoopHandOver`; docs/ARCHITECTURE.md, "Threads").
  @Suite struct WatchHandOver {
    /// What one follower heard: each version's `n`, with the thread it was heard on.
    final class Heard: Sendable {
      private let state = Protected<[(n: Int, thread: String)]>([])
      private let gate = ConditionLock()
      private let released = Protected(false)
      /// The version whose report blocks until ``release()``; `nil`: none blocks.
      let blocksAt: Int?

      init(blockingAt blocksAt: Int? = nil) { self.blocksAt = blocksAt }

      var handler: @Sendable (DocumentFollower.Event) -> Void {
        { [self] event in
          guard case .changed(.object(let object), _, _) = event, case .number(let number)? = object["n"],
            let n = Int(number.text)
          else { return }
          let thread = (contents("/proc/thread-self/comm") ?? "?").trimmingCharacters(in: .newlines)
          state.withLock { $0.append((n, thread)) }
          guard n == blocksAt else { return }
          gate.withLock { while !released.withLock({ $0 }) { gate.wait() } }
        }
      }

      var versions: [Int] { state.withLock { $0.map(\.n) } }
      var threads: [String] { state.withLock { $0.map(\.thread) } }

      func release() {
        released.withLock { $0 = true }
        gate.withLock { gate.broadcast() }
      }
    }

    /// A follower of `key` that reports every version, its document read first.
    private func follow(_ cluster: EtcdCluster, _ key: String, _ heard: Heard) throws -> DocumentFollower {
      let document = SharedDocument(etcd: EtcdLocation(endpoints: cluster.endpoints, key: key))
      _ = try document.read()
      return document.follow(followsSchema: false, everyVersion: true, heard.handler)
    }

    /// Cancels the test when `blocked`'s blocking look did not run on the watch thread: a
    /// loaded machine delayed it past the inline budget, so no hand-over was needed.
    private func cancelUnlessOnTheWatchThread(_ blocked: Heard) throws {
      if blocked.threads.first != "ccsync-etcd" {
        try Test.cancel("the blocked look ran on \(blocked.threads.first ?? "?"), not the watch thread (a loaded machine delayed it past the inline budget): no hand-over was needed")
      }
    }

    @Test func aChangeIsLookedAtOnTheWatchThreadThatReadIt() throws {
      let cluster = try EtcdCluster()
      defer { cluster.shutdown() }
      let client = try cluster.client()
      try client.put(bytes("inline"), value: bytes(#"{"n": 0}"#))
      let heard = Heard()
      let follower = try follow(cluster, "inline", heard)
      defer { follower.stop() }
      // One look in a quiet turn runs inline; several puts, so that a turn the machine's load
      // delayed past the inline budget (handed to the reload pool) cannot fail the test.
      for n in 1...5 {
        try client.put(bytes("inline"), value: bytes(#"{"n": \#(n)}"#))
        #expect(waitUntil { heard.versions.last == n }, "put \(n) not heard: \(heard.versions)")
      }
      #expect(heard.versions == Array(1...5))
      #expect(heard.threads.contains("ccsync-etcd"), "no look ran on the watch thread: \(heard.threads)")
    }

    /// Two followers of one key share its stream; the first blocks in its report of version
    /// 1 on the watch thread. The standby takes the stream over: the second hears 1, 2 and 3
    /// meanwhile, and the first, released, hears 2 and 3 too, none merged away.
    @Test func aBlockedSubscriberHandsTheStreamOverAndMissesNoVersion() throws {
      let cluster = try EtcdCluster()
      defer { cluster.shutdown() }
      let client = try cluster.client()
      try client.put(bytes("shared"), value: bytes(#"{"n": 0}"#))
      let blocked = Heard(blockingAt: 1)
      defer { blocked.release() }
      let other = Heard()
      let blockedFollower = try follow(cluster, "shared", blocked)  // subscribed first: called first
      defer { blockedFollower.stop() }
      let otherFollower = try follow(cluster, "shared", other)
      defer { otherFollower.stop() }

      try client.put(bytes("shared"), value: bytes(#"{"n": 1}"#))
      #expect(waitUntil { blocked.versions == [1] }, "the first follower never heard version 1: \(blocked.versions)")
      for n in 2...3 { try client.put(bytes("shared"), value: bytes(#"{"n": \#(n)}"#)) }
      #expect(waitUntil { other.versions == [1, 2, 3] }, "the other follower waited behind the blocked one: \(other.versions)")
      #expect(blocked.versions == [1], "the blocked follower reported again before its report returned")

      blocked.release()
      #expect(waitUntil { blocked.versions == [1, 2, 3] }, "a version was lost or merged away: \(blocked.versions)")
      try cancelUnlessOnTheWatchThread(blocked)
    }

    /// A key's only subscriber runs its turns without the standby's timer (nobody else waits
    /// on the stream). A second follower that subscribes while the first is blocked arms it:
    /// the standby takes the stream over, and the newcomer hears 2 and 3 before the blocked
    /// one returns, which then hears them too.
    @Test func aSubscriberJoiningWhileTheOnlyOneIsBlockedIsNotHeldUp() throws {
      let cluster = try EtcdCluster()
      defer { cluster.shutdown() }
      let client = try cluster.client()
      try client.put(bytes("joined"), value: bytes(#"{"n": 0}"#))
      let blocked = Heard(blockingAt: 1)
      defer { blocked.release() }
      let blockedFollower = try follow(cluster, "joined", blocked)
      defer { blockedFollower.stop() }
      try client.put(bytes("joined"), value: bytes(#"{"n": 1}"#))
      #expect(waitUntil { blocked.versions == [1] }, "the only follower never heard version 1: \(blocked.versions)")

      let newcomer = Heard()
      let newcomerFollower = try follow(cluster, "joined", newcomer)
      defer { newcomerFollower.stop() }
      for n in 2...3 { try client.put(bytes("joined"), value: bytes(#"{"n": \#(n)}"#)) }
      #expect(waitUntil { newcomer.versions.last == 3 }, "the newcomer waited behind the blocked follower: \(newcomer.versions)")
      #expect(newcomer.versions.filter { $0 >= 2 } == [2, 3], "\(newcomer.versions)")
      #expect(blocked.versions == [1], "the blocked follower reported again before its report returned")

      blocked.release()
      #expect(waitUntil { blocked.versions == [1, 2, 3] }, "a version was lost or merged away: \(blocked.versions)")
      try cancelUnlessOnTheWatchThread(blocked)
    }
  }
}
