import Testing
@testable import CCSync
@testable import CCSyncEtcd

extension EtcdTests {
  /// Range, put, delete, compaction and compare-and-swap on one member.
  @Suite struct KeyValue {
    @Test func putAndRangeRoundTripBinaryAndLargeValues() throws {
      let cluster = try EtcdCluster()
      defer { cluster.shutdown() }
      let client = try cluster.client()

      // Every byte value, invalid UTF-8 and NUL included, in key and value.
      let key: [UInt8] = [0x00, 0xff, 0xc3, 0x28] + bytes("doc")
      let binary = (0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
      let first = try client.put(key, value: binary)
      let (stored, readRevision) = try client.get(key)
      #expect(stored?.key == key)
      #expect(stored?.value == binary)
      #expect(stored?.createRevision == first.revision)
      #expect(stored?.modRevision == first.revision)
      #expect(stored?.version == 1)
      #expect(readRevision == first.revision)

      // 1 MiB: below the default --max-request-bytes (1.5 MiB) once base64 has grown it.
      let large = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 ^ ($0 >> 8)) }
      let second = try client.put(key, value: large, returnPrevious: true)
      #expect(second.revision == first.revision + 1)
      #expect(second.previous?.value == binary)
      let reread = try #require(try client.get(key).keyValue)
      #expect(reread.value == large)
      #expect(reread.version == 2)
      #expect(reread.createRevision == first.revision)
      #expect(reread.modRevision == second.revision)
      // The old version is still readable at its revision.
      #expect(try client.get(key, revision: first.revision).keyValue?.value == binary)

      // An empty value is a value (the gateway leaves the field out).
      try client.put(bytes("empty"), value: [])
      let empty = try #require(try client.get(bytes("empty")).keyValue)
      #expect(empty.value == [])
      #expect(empty.version == 1)
      #expect(try client.get(bytes("missing")).keyValue == nil)
    }

    @Test func aPrefixRangeListsItsKeysInOrderAndALimitSaysThereIsMore() throws {
      let cluster = try EtcdCluster()
      defer { cluster.shutdown() }
      let client = try cluster.client()
      for name in ["app/b", "app/a", "app/c", "apq", "ap"] { try client.put(bytes(name), value: bytes(name.uppercased())) }

      let all = try client.range(.prefix(bytes("app/")))
      #expect(all.keyValues.map(\.key) == ["app/a", "app/b", "app/c"].map(bytes))
      #expect(all.keyValues.map(\.value) == ["APP/A", "APP/B", "APP/C"].map(bytes))
      #expect(all.count == 3)
      #expect(!all.more)
      let limited = try client.range(.prefix(bytes("app/")), limit: 2)
      #expect(limited.keyValues.count == 2)
      #expect(limited.count == 3)
      #expect(limited.more)
      #expect(EtcdJSON.prefixEnd([0x61, 0xff]) == [0x62])
      #expect(EtcdJSON.prefixEnd([0xff, 0xff]) == [0])
    }

    @Test func deleteRemovesAKeyOrAPrefixAndReportsWhatItDeleted() throws {
      let cluster = try EtcdCluster()
      defer { cluster.shutdown() }
      let client = try cluster.client()
      let put = try client.put(bytes("one"), value: bytes("1"))
      for name in ["dir/x", "dir/y"] { try client.put(bytes(name), value: bytes(name)) }

      let deleted = try client.delete(.key(bytes("one")), returnPrevious: true)
      #expect(deleted.deleted == 1)
      #expect(deleted.previous.map(\.value) == [bytes("1")])
      #expect(deleted.previous.first?.modRevision == put.revision)
      #expect(try client.get(bytes("one")).keyValue == nil)

      let missing = try client.delete(.key(bytes("one")))
      #expect(missing.deleted == 0)
      #expect(missing.revision == deleted.revision)  // nothing changed, no new revision

      #expect(try client.delete(.prefix(bytes("dir/"))).deleted == 2)
      #expect(try client.range(.prefix(bytes("dir/"))).keyValues.isEmpty)
    }

    @Test func aCompactedRevisionIsATypedError() throws {
      let cluster = try EtcdCluster()
      defer { cluster.shutdown() }
      let client = try cluster.client()
      let old = try client.put(bytes("k"), value: bytes("old"))
      let new = try client.put(bytes("k"), value: bytes("new"))
      try client.compact(upTo: new.revision)

      let error = #expect(throws: EtcdError.self) { try client.get(bytes("k"), revision: old.revision) }
      guard case .compacted(let endpoint, _)? = error else {
        Issue.record("expected compacted, got \(String(describing: error))")
        return
      }
      #expect(endpoint == cluster.endpoints[0])
      #expect(error?.description.hasPrefix("etcd \(cluster.endpoints[0]): ") == true)
      #expect(try client.get(bytes("k"), revision: new.revision).keyValue?.value == bytes("new"))
    }
  }
}
