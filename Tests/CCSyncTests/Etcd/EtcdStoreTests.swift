import Foundation
import Testing
@testable import CCSync
@testable import CCSyncEtcd
import CCSyncSystem

extension EtcdTests {
  /// The document and storage layers on an etcd key (``EtcdStore``), against real members,
  /// with etcdctl as the foreign writer and reader.
  @Suite struct Store {
    private func location(_ cluster: EtcdCluster, key: String = "cfg/app", endpoints: [String]? = nil) -> EtcdLocation {
      EtcdLocation(endpoints: endpoints ?? cluster.endpoints, key: key)
    }

    @Test func aDocumentIsCreatedUpdatedAndReadAsAFileIs() throws {
      let cluster = try EtcdCluster()
      defer { cluster.shutdown() }
      let document = SharedDocument(etcd: location(cluster), logger: .silent)
      #expect(try document.read() == nil, "a missing key is a missing document")
      try document.update { $0[member: "count"] = 1 }
      try document.update { value in
        let count = value[member: "count"]?.numberValue?.int64Value ?? 0
        value[member: "count"] = .number(JSONNumber(count + 1))
        value[member: "name"] = "app"
      }
      let stored = try cluster.etcdctl(["get", "--print-value-only", "cfg/app"])
      #expect(stored.status == 0, "\(stored.standardError)")
      #expect(stored.standardOutput == "{\n  \"count\": 2,\n  \"name\": \"app\"\n}\n\n", "pretty, as a file is written")
      #expect(try SharedDocument(etcd: location(cluster), logger: .silent).read() == ["count": 2, "name": "app"])
    }

    /// A foreign write between the update's read and its transaction: the compare fails, the
    /// failure branch returns the new value, and the closure runs again on it.
    @Test func aLostCompareAndSwapRunsTheClosureAgainOnTheCurrentValue() throws {
      let cluster = try EtcdCluster()
      defer { cluster.shutdown() }
      let document = SharedDocument(etcd: location(cluster), logger: .silent)
      try document.update { $0 = ["mine": 0, "theirs": 0] }
      var runs = 0
      try document.update { value in
        runs += 1
        if runs == 1 {
          let put = try cluster.etcdctl(["put", "cfg/app", #"{"mine": 0, "theirs": 5}"#])
          #expect(put.status == 0, "\(put.standardError)")
        }
        value[member: "mine"] = .number(JSONNumber(Int64(runs)))
      }
      #expect(runs == 2, "the closure runs again after the lost compare")
      #expect(try document.read() == ["mine": 2, "theirs": 5], "the foreign write survives")
    }

    @Test func exactIncrementsFromManyThreadsAndDocuments() throws {
      let cluster = try EtcdCluster()
      defer { cluster.shutdown() }
      let threads = 4, increments = 25
      let workers = (0..<threads).map { _ in
        BackgroundThread { () throws -> Void in
          let document = SharedDocument(etcd: EtcdLocation(endpoints: cluster.endpoints, key: "counter"), logger: .silent)
          for _ in 0..<increments {
            try document.update { value in
              let count = value[member: "n"]?.numberValue?.int64Value ?? 0
              value[member: "n"] = .number(JSONNumber(count + 1))
            }
          }
        }
      }
      for worker in workers { _ = try #require(worker.result(deadline: .seconds(60))).get() }
      let document = SharedDocument(etcd: EtcdLocation(endpoints: cluster.endpoints, key: "counter"), logger: .silent)
      #expect(try document.read() == ["n": .number(JSONNumber(Int64(threads * increments)))])
    }

    @Test func aStorageReloadsEtcdctlWritesAndDeletes() throws {
      let cluster = try EtcdCluster()
      defer { cluster.shutdown() }
      let storage = CodableStorage(
        defaultValue: SharedSettings(), location: .etcd(location(cluster)), updateMode: .manual, options: watchingOptions)
      let probe = ReloadProbe(storage)
      #expect(storage.fileState == .missing)
      #expect(try cluster.etcdctl(["put", "cfg/app", #"{"theme": "dark", "fontSize": 20}"#]).status == 0)
      #expect(waitUntil { storage.wrappedValue.theme == "dark" }, "the put reached the value")
      #expect(storage.wrappedValue.fontSize == 20)
      #expect(waitUntil { probe.externalValues.contains { $0.theme == "dark" } })
      #expect(try cluster.etcdctl(["del", "cfg/app"]).status == 0)
      #expect(waitUntil { storage.fileState == .missing }, "the delete was seen")
      #expect(storage.wrappedValue.theme == "dark", "the value is kept")

      storage.wrappedValue.fontSize = 30
      try storage.save()
      let stored = try cluster.etcdctl(["get", "--print-value-only", "cfg/app"])
      #expect(stored.standardOutput.contains("\"fontSize\": 30"), "\(stored.standardOutput)")
      #expect(probe.errors.isEmpty, "\(probe.errors)")
    }

    /// An invalid value is never destroyed: its bytes go to `KEY.corrupt-REVISION` in the
    /// transaction that replaces it.
    @Test func anInvalidValueIsKeptInTheTransactionThatReplacesIt() throws {
      let cluster = try EtcdCluster()
      defer { cluster.shutdown() }
      let put = try cluster.etcdctl(["put", "-w", "json", "cfg/app", "{not json"])
      #expect(put.status == 0, "\(put.standardError)")
      let client = try cluster.client()
      let invalidRevision = try #require(try client.get(bytes("cfg/app")).keyValue?.modRevision)
      let storage = CodableStorage(
        defaultValue: SharedSettings(), location: .etcd(location(cluster)), updateMode: .manual, options: watchingOptions)
      guard case .invalid = storage.fileState else {
        Issue.record("an invalid value read as \(storage.fileState)")
        return
      }
      storage.wrappedValue.theme = "fixed"
      try storage.save()
      let copy = try client.get(bytes("cfg/app.corrupt-\(invalidRevision)")).keyValue
      #expect(copy?.value == bytes("{not json"))
      let replaced = try #require(try client.get(bytes("cfg/app")).keyValue)
      #expect(copy?.modRevision == replaced.modRevision, "kept in the same transaction")
      #expect(try JSONValue(parsing: replaced.value)[member: "theme"] == "fixed")
    }

    @Test func aValueOverTheClustersLimitIsRefusedAndNothingWritten() throws {
      let cluster = try EtcdCluster(flags: ["--max-request-bytes", "20000"])
      defer { cluster.shutdown() }
      let document = SharedDocument(etcd: location(cluster), logger: .silent)
      try document.update { $0 = ["small": true] }
      let error = #expect(throws: StorageError.self) {
        try document.update { $0[member: "big"] = .string(String(repeating: "x", count: 600_000)) }
      }
      guard case .store(.tooLarge(let message))? = error else {
        Issue.record("expected tooLarge, got \(String(describing: error))")
        return
      }
      #expect(message.contains("cfg/app"), "\(message)")
      #expect(try document.read() == ["small": true])
    }

    @Test func anUnreachableClusterIsReportedNamingItsEndpoints() throws {
      let ports = try EtcdCluster.freePorts(2)
      let endpoints = ports.map { "127.0.0.1:\($0)" }
      let document = SharedDocument(etcd: EtcdLocation(endpoints: endpoints, key: "k"), logger: .silent)
      let started = ContinuousClock.now
      let error = #expect(throws: StorageError.self) { try document.read() }
      #expect(ContinuousClock.now - started < .seconds(8), "within the deadline")
      guard case .store(.unreachable(let message))? = error else {
        Issue.record("expected unreachable, got \(String(describing: error))")
        return
      }
      for endpoint in endpoints { #expect(message.contains(endpoint), "\(message)") }
    }

    @Test func malformedLocationsAreRefusedNamingWhy() {
      let cases = ["etcd://127.0.0.1:2379", "etcd://127.0.0.1:2379/", "etcd://a:1,,b:2/k", "etcd://host:99999/k", "http://x/k"]
      for text in cases {
        #expect(throws: StoreError.self, "\(text)") { try EtcdLocation(url: text, environment: { _ in nil }) }
      }
      let fromEnvironment = try? EtcdLocation(url: "etcd:///cfg/app", environment: {
        ["ETCDCTL_ENDPOINTS": "http://10.0.0.1:2379,10.0.0.2:2379", "ETCDCTL_USER": "root:pw:x"][$0]
      })
      #expect(fromEnvironment?.endpoints == ["http://10.0.0.1:2379", "10.0.0.2:2379"])
      #expect(fromEnvironment?.key == "cfg/app")
      #expect(fromEnvironment?.user == "root")
      #expect(fromEnvironment?.password == "pw:x")
      #expect((try? EtcdLocation(url: "etcd:///a/b/c", environment: { _ in nil }))?.endpoints == ["127.0.0.1:2379"])
      #expect((try? EtcdLocation(url: "etcd://127.0.0.1:2379/a/b/c", environment: { _ in nil }))?.key == "a/b/c")
    }
  }
}

extension JSONValue {
  /// The member `key` of an object (`nil` for anything else); setting it on an object sets
  /// the member, on anything else does nothing.
  fileprivate subscript(member key: String) -> JSONValue? {
    get {
      guard case .object(let object) = self else { return nil }
      return object[key]
    }
    set {
      guard case .object(var object) = self else { return }
      object[key] = newValue
      self = .object(object)
    }
  }
}
