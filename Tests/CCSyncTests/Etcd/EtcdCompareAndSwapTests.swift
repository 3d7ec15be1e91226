import Testing
@testable import CCSync
@testable import CCSyncEtcd

extension EtcdTests {
  /// Compare-and-swap through one transaction whose failure branch reads the key back.
  @Suite struct CompareAndSwap {
    @Test func aSwapAtTheExpectedRevisionWinsAndAStaleOneGetsTheCurrentValue() throws {
      let cluster = try EtcdCluster()
      defer { cluster.shutdown() }
      let client = try cluster.client()
      let key = bytes("settings")
      let first = try client.put(key, value: bytes("v1"))

      let swapped = try client.compareAndSwap(key, expecting: .modifiedAt(first.revision), value: bytes("v2"))
      guard case .swapped(let revision) = swapped else {
        Issue.record("expected a swap, got \(swapped)")
        return
      }
      #expect(revision == first.revision + 1)
      let stored = try #require(try client.get(key).keyValue)
      #expect(stored.value == bytes("v2"))
      #expect(stored.modRevision == revision)

      // A writer that still holds the first version loses, and learns the current one
      // from the same round trip.
      let stale = try client.compareAndSwap(key, expecting: .modifiedAt(first.revision), value: bytes("v3"))
      #expect(stale == .conflict(current: stored, revision: revision))
      #expect(try client.get(key).keyValue?.value == bytes("v2"))
    }

    @Test func aMissingKeyIsCreatedOnlyByTheFirstWriterExpectingItAbsent() throws {
      let cluster = try EtcdCluster()
      defer { cluster.shutdown() }
      let client = try cluster.client()
      let key = bytes("new-document")

      // Expecting a revision of a key that does not exist: conflict, and no current value.
      let notThere = try client.compareAndSwap(key, expecting: .modifiedAt(1), value: bytes("x"))
      guard case .conflict(nil, _) = notThere else {
        Issue.record("expected a conflict without a current value, got \(notThere)")
        return
      }

      guard case .swapped(let created) = try client.compareAndSwap(key, expecting: .absent, value: bytes("first")) else {
        Issue.record("the first create did not swap")
        return
      }
      let second = try client.compareAndSwap(key, expecting: .absent, value: bytes("second"))
      guard case .conflict(let current?, let revision) = second else {
        Issue.record("expected a conflict with the first value, got \(second)")
        return
      }
      #expect(current.value == bytes("first"))
      #expect(current.createRevision == created)
      #expect(revision == created)
    }

    @Test func extraWritesOfTheSuccessBranchLandAtTheSameRevision() throws {
      let cluster = try EtcdCluster()
      defer { cluster.shutdown() }
      let client = try cluster.client()
      let key = bytes("doc")
      let broken = try client.put(key, value: bytes("{not json"))
      let corruptKey = bytes("doc.corrupt-\(broken.revision)")

      let outcome = try client.compareAndSwap(
        key, expecting: .modifiedAt(broken.revision), value: bytes("{}"),
        alsoWrite: [.put(key: corruptKey, value: bytes("{not json"), lease: nil)])
      guard case .swapped(let revision) = outcome else {
        Issue.record("expected a swap, got \(outcome)")
        return
      }
      let kept = try #require(try client.get(corruptKey).keyValue)
      #expect(kept.value == bytes("{not json"))
      #expect(kept.modRevision == revision)
      #expect(try client.get(key).keyValue?.modRevision == revision)

      // A failed compare applies none of the success branch.
      let other = bytes("doc.corrupt-other")
      let stale = try client.compareAndSwap(
        key, expecting: .modifiedAt(broken.revision), value: bytes("[]"),
        alsoWrite: [.put(key: other, value: bytes("x"), lease: nil)])
      guard case .conflict = stale else {
        Issue.record("expected a conflict, got \(stale)")
        return
      }
      #expect(try client.get(other).keyValue == nil)
    }

    @Test func aTransactionWithOnlyReadsAndCompareOperatorsWorks() throws {
      let cluster = try EtcdCluster()
      defer { cluster.shutdown() }
      let client = try cluster.client()
      try client.put(bytes("a"), value: bytes("1"))
      try client.put(bytes("a"), value: bytes("2"))

      let result = try client.transaction(
        if: [EtcdCompare(key: bytes("a"), .version(1), .greater), EtcdCompare(key: bytes("a"), .value(bytes("2")))],
        then: [.range(.key(bytes("a"))), .range(.key(bytes("b")))], else: [])
      #expect(result.succeeded)
      guard result.results.count == 2, case .range(let a) = result.results[0], case .range(let b) = result.results[1] else {
        Issue.record("expected two range results, got \(result.results)")
        return
      }
      #expect(a.first?.value == bytes("2"))
      #expect(b.keyValues.isEmpty)
      let failed = try client.transaction(if: [EtcdCompare(key: bytes("a"), .version(2), .less)], then: [.delete(.key(bytes("a")))])
      #expect(!failed.succeeded)
      #expect(failed.results.isEmpty)
      #expect(try client.get(bytes("a")).keyValue != nil)
    }
  }
}
