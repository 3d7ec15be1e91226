import Foundation
import Testing
@testable import CCSync
@testable import CCSyncEtcd

extension EtcdTests {
  /// Watch streams: events from another writer, resuming, compaction, and every way a
  /// stream ends.
  @Suite struct Watch {
    @Test func aWatchSeesPutsAndDeletesOfAForeignWriter() throws {
      let cluster = try EtcdCluster()
      defer { cluster.shutdown() }
      let client = try cluster.client()
      let stream = try client.watch(.key(bytes("shared")))
      defer { stream.close() }

      let put = try cluster.etcdctl(["put", "shared", "from etcdctl"])
      #expect(put.succeeded, "\(put.standardError)")
      let written = try #require(try stream.next(timeout: .seconds(5)))
      #expect(written.events.count == 1)
      let event = try #require(written.events.first)
      #expect(event.kind == .put)
      #expect(event.keyValue.key == bytes("shared"))
      #expect(event.keyValue.value == bytes("from etcdctl"))
      #expect(event.keyValue.version == 1)
      #expect(written.revision == event.keyValue.modRevision)
      #expect(try client.get(bytes("shared")).keyValue?.modRevision == event.keyValue.modRevision)

      let delete = try cluster.etcdctl(["del", "shared"])
      #expect(delete.succeeded, "\(delete.standardError)")
      let deleted = try #require(try stream.next(timeout: .seconds(5)))
      #expect(deleted.events.map(\.kind) == [.delete])
      #expect(deleted.events.first?.keyValue.key == bytes("shared"))
      #expect(deleted.events.first?.keyValue.modRevision == event.keyValue.modRevision + 1)
      #expect(deleted.events.first?.keyValue.value == [])
    }

    @Test func aWatchResumesFromARevisionAndReportsPreviousValues() throws {
      let cluster = try EtcdCluster()
      defer { cluster.shutdown() }
      let client = try cluster.client()
      var revisions: [Int64] = []
      for value in ["1", "2", "3"] { revisions.append(try client.put(bytes("p/k"), value: bytes(value)).revision) }
      try client.put(bytes("p/other"), value: bytes("x"))

      let stream = try client.watch(.prefix(bytes("p/")), startRevision: revisions[1], previousValues: true)
      defer { stream.close() }
      var events: [EtcdEvent] = []
      while events.count < 3 {
        guard let response = try stream.next(timeout: .seconds(5)) else {
          Issue.record("only \(events.count) of 3 events arrived")
          return
        }
        events += response.events
      }
      #expect(events.map(\.keyValue.value) == ["2", "3", "x"].map(bytes))
      #expect(events.map(\.keyValue.modRevision) == [revisions[1], revisions[2], revisions[2] + 1])
      #expect(events[0].previous?.value == bytes("1"))
      #expect(events[2].previous == nil)
    }

    /// A 1 MiB value is a 1.4 MB line of base64 in the stream, arriving over many reads and
    /// chunks; the next small event must follow it intact.
    @Test func aLargeValueArrivesWholeAcrossChunks() throws {
      let cluster = try EtcdCluster()
      defer { cluster.shutdown() }
      let client = try cluster.client()
      let stream = try client.watch(.key(bytes("big")))
      defer { stream.close() }
      let large = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7 ^ $0 >> 11) }
      try client.put(bytes("big"), value: large)
      try client.put(bytes("big"), value: bytes("small"))
      var values: [[UInt8]] = []
      while values.count < 2, let response = try stream.next(timeout: .seconds(5)) {
        values += response.events.map(\.keyValue.value)
      }
      #expect(values.count == 2)
      #expect(values.first == large)
      #expect(values.last == bytes("small"))
    }

    @Test func watchingFromACompactedRevisionFailsWithTheCompactionRevision() throws {
      let cluster = try EtcdCluster()
      defer { cluster.shutdown() }
      let client = try cluster.client()
      let first = try client.put(bytes("c"), value: bytes("1"))
      let last = try client.put(bytes("c"), value: bytes("2"))
      try client.compact(upTo: last.revision)

      let stream = try client.watch(.key(bytes("c")), startRevision: first.revision)
      defer { stream.close() }
      let error = #expect(throws: EtcdError.self) { try stream.next(timeout: .seconds(5)) }
      #expect(error == .compacted(endpoint: cluster.endpoints[0], revision: last.revision))
      // The stream stays ended.
      #expect(throws: EtcdError.self) { try stream.next(timeout: .seconds(1)) }
    }

    @Test func aMemberShuttingDownEndsTheStreamWithAnErrorNotAHang() throws {
      let cluster = try EtcdCluster()
      defer { cluster.shutdown() }
      let client = try cluster.client()
      let stream = try client.watch(.key(bytes("k")))
      defer { stream.close() }

      try cluster.stop(0)
      let started = ContinuousClock.now
      let error = #expect(throws: EtcdError.self) { try stream.next(timeout: .seconds(10)) }
      guard case .watchEnded(let endpoint, let reason)? = error else {
        Issue.record("expected watchEnded, got \(String(describing: error))")
        return
      }
      #expect(endpoint == cluster.endpoints[0])
      // SIGTERM: the gateway's last message is `transport is closing` (24 runs in 25 under
      // load), else `grpc: the client connection is closing`; the connection may also end.
      #expect(!reason.isEmpty)
      #expect(ContinuousClock.now - started < .seconds(2))
    }

    @Test func aKilledMemberEndsTheStreamAndAFrozenOneOnlyTimesOut() throws {
      let cluster = try EtcdCluster()
      defer { cluster.shutdown() }
      let client = try cluster.client()
      let stream = try client.watch(.key(bytes("k")))
      defer { stream.close() }

      // Frozen: nothing arrives, the wait is bounded, and the stream is still usable after.
      try cluster.freeze(0)
      #expect(try stream.next(timeout: .milliseconds(200)) == nil)
      try cluster.thaw(0)
      try client.put(bytes("k"), value: bytes("after thaw"))
      #expect(try stream.next(timeout: .seconds(5))?.events.first?.keyValue.value == bytes("after thaw"))

      try cluster.kill(0)
      let error = #expect(throws: EtcdError.self) { try stream.next(timeout: .seconds(10)) }
      guard case .watchEnded? = error else {
        Issue.record("expected watchEnded, got \(String(describing: error))")
        return
      }
    }

    @Test func anotherThreadCanCancelAWaitingWatch() throws {
      let cluster = try EtcdCluster()
      defer { cluster.shutdown() }
      let client = try cluster.client()
      let stream = try client.watch(.key(bytes("k")))
      let canceller = stream.canceller
      let started = ContinuousClock.now
      let waiter = BackgroundThread { () throws -> String in
        do {
          _ = try stream.next(timeout: nil)
          return "returned"
        } catch {
          return "\(error)"
        }
      }
      #expect(waiter.result(deadline: .milliseconds(100)) == nil, "next() returned with nothing to report")
      canceller.cancel()
      let outcome = try waiter.value(deadline: .seconds(5))
      #expect(outcome.contains("watch stream ended: canceled by the client"), "\(outcome)")
      #expect(ContinuousClock.now - started < .seconds(3))
    }
  }
}
