import CCSyncJSON
import Testing
@testable import CCSyncEtcd

/// The request bodies the key-value and watch calls write as bytes (``EtcdRequestWriter``).
@Suite struct EtcdRequestWriterTests {
  @Test(arguments: [0, 1, 2, 3, 95, 96, 97, 3071, 3072, 3073, 6145, 10_000])
  func base64AppendedInPlaceIsTheEncodedText(_ length: Int) {
    var generator = SystemRandomNumberGenerator()
    let bytes = (0..<length).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    var output = Array("prefix:".utf8)
    Base64.encode(bytes, appendingTo: &output)
    #expect(output == Array("prefix:".utf8) + Array(Base64.encoded(bytes).utf8))
  }

  @Test func aCompareAndSwapBodyIsTheJSONTheGatewayReads() throws {
    var body = EtcdRequestWriter(capacity: 16)
    body.beginArray("compare")
    EtcdCompare.modRevision(of: Array("k".utf8), equals: 42).write(into: &body)
    EtcdCompare(key: Array("k".utf8), .value(Array("v".utf8)), .notEqual).write(into: &body)
    body.endArray()
    body.beginArray("success")
    EtcdOperation.put(key: Array("k".utf8), value: Array("doc".utf8), lease: 7).write(into: &body)
    EtcdOperation.delete(.prefix(Array("p".utf8))).write(into: &body)
    body.endArray()
    body.beginArray("failure")
    EtcdOperation.range(.key(Array("k".utf8))).write(into: &body)
    body.endArray()
    body.bool("prev_kv", true)
    let written = try JSONValue(parsing: body.finished())
    let expected = try JSONValue(parsing: Array("""
      {"compare":[{"key":"aw==","result":"EQUAL","target":"MOD","mod_revision":"42"},
                  {"key":"aw==","result":"NOT_EQUAL","target":"VALUE","value":"dg=="}],
       "success":[{"request_put":{"key":"aw==","value":"ZG9j","lease":"7"}},
                  {"request_delete_range":{"key":"cA==","range_end":"cQ=="}}],
       "failure":[{"request_range":{"key":"aw=="}}],
       "prev_kv":true}
      """.utf8))
    #expect(written == expected)
  }
}
