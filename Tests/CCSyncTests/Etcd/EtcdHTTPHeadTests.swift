import Testing
@testable import CCSyncEtcd

/// The response head's lines, read as bytes: what the etcd gateway sends, and the malformed
/// lines the connection must refuse (the framing itself is tested against a real member in
/// ``EtcdTests/Transport``).
@Suite struct EtcdHTTPHeadTests {
  func bytes(_ text: String) -> ArraySlice<UInt8> { Array(text.utf8)[...] }

  @Test func statusLinesGiveVersionCodeAndReason() throws {
    let ok = try #require(HTTPHeadSyntax.statusLine(bytes("HTTP/1.1 200 OK")))
    #expect(ok.isHTTP11 && ok.status == 200 && ok.reason == "OK")
    let old = try #require(HTTPHeadSyntax.statusLine(bytes("HTTP/1.0 503 Service Unavailable")))
    #expect(!old.isHTTP11 && old.status == 503 && old.reason == "Service Unavailable")
    let bare = try #require(HTTPHeadSyntax.statusLine(bytes("HTTP/1.1 204")))
    #expect(bare.status == 204 && bare.reason == "")
  }

  @Test(arguments: ["", "HTTP/1.1", "HTTP/2 200 OK", "HTTP/1.1 20 OK", "HTTP/1.1 2000 OK", "HTTP/1.1 +20 OK", "HTTP/1.1 2x0 OK", "ICY 200 OK"])
  func otherLinesAreNotStatusLines(_ line: String) {
    #expect(HTTPHeadSyntax.statusLine(bytes(line)) == nil)
  }

  @Test func fieldsAreSplitAtTheFirstColonAndTrimmed() {
    #expect(HTTPHeadSyntax.field(bytes("Content-Length: 1776")) == HTTPHeader(name: "Content-Length", value: "1776"))
    #expect(HTTPHeadSyntax.field(bytes("Date:\t Sat, 05 Dec 2026 09:36:49 GMT \t")) == HTTPHeader(name: "Date", value: "Sat, 05 Dec 2026 09:36:49 GMT"))
    #expect(HTTPHeadSyntax.field(bytes("X-Empty:")) == HTTPHeader(name: "X-Empty", value: ""))
    for malformed in ["no colon", ": no name", " Folded: line", "\tFolded: line"] {
      #expect(HTTPHeadSyntax.field(bytes(malformed)) == nil, "\(malformed)")
    }
  }

  @Test func namesCompareWithoutRegardToCase() {
    let headers = [HTTPHeader(name: "Transfer-Encoding", value: "gzip, Chunked"), HTTPHeader(name: "grpc-status", value: "0")]
    #expect(headers.value(named: "transfer-encoding") == "gzip, Chunked")
    #expect(headers.value(named: "Grpc-Status") == "0")
    #expect(headers.value(named: "Content-Length") == nil)
    #expect(HTTPHeadSyntax.endsInChunked(bytes("gzip, Chunked")))
    #expect(!HTTPHeadSyntax.endsInChunked(bytes("chunked, gzip")))
    #expect(HTTPHeadSyntax.contains(bytes("Keep-Alive, CLOSE"), lowercaseWord: Array("close".utf8)))
    #expect(!HTTPHeadSyntax.contains(bytes("keep-alive"), lowercaseWord: Array("close".utf8)))
  }

  /// The fields a head is read for, from its lines as the gateway and other servers send them.
  func fields(_ lines: [String]) -> HTTPFramingFields? {
    var fields = HTTPFramingFields()
    for line in lines where !fields.add(bytes(line)) { return nil }
    return fields
  }

  @Test func framingComesFromTheLengthOrTheCodingsAndTheOtherFieldsAreSkipped() throws {
    let gateway = try #require(fields(["Content-Type: application/json", "Grpc-Metadata-Content-Type: application/grpc", "Date: Sat, 05 Dec 2026 09:36:49 GMT", "Content-Length: 1776"]))
    #expect(gateway.framing(status: 200) == .length(1776) && !gateway.closesConnection)
    let chunked = try #require(fields(["TRANSFER-ENCODING: gzip, Chunked", "Content-Length: 12", "Trailer: Grpc-Trailer-Grpc-Status"]))
    #expect(chunked.framing(status: 200) == .chunked)
    #expect(try #require(fields(["transfer-encoding: chunked, gzip"])).framing(status: 200) == .untilClose)
    #expect(try #require(fields(["X-Content-Length: 5"])).framing(status: 200) == .untilClose)
    #expect(try #require(fields(["Content-Length: 5"])).framing(status: 204) == .length(0))
    #expect(try #require(fields(["Connection: keep-alive, Close", "Content-Length: 0"])).closesConnection)
    #expect(try #require(fields(["Connection: keep-alive", "Connections: close"])).closesConnection == false)
  }

  @Test func lengthsThatDisagreeOrAreNotDecimalAreRefused() throws {
    let twice = try #require(fields(["Content-Length: 12", "content-length: 12"]))
    #expect(twice.framing(status: 200) == .length(12))
    let differing = try #require(fields(["Content-Length: 13", "Content-Length: 12"]))
    #expect(differing.framing(status: 200) == nil && differing.contentLengthsText == "12, 13")
    #expect(try #require(fields(["Content-Length: 0x10"])).framing(status: 200) == nil)
    #expect(fields(["Content-Length: 1", " folded"]) == nil)
    #expect(fields(["no colon"]) == nil)
  }

  @Test func sizesAndLengthsAreHexadecimalAndDecimalDigitsOnly() {
    #expect(HTTPHeadSyntax.chunkSize(bytes("1aF")) == 0x1af)
    #expect(HTTPHeadSyntax.chunkSize(bytes("10 ;name=value")) == 16)
    #expect(HTTPHeadSyntax.chunkSize(bytes("0")) == 0)
    for bad in ["", ";x", "-1", "+1", "g", "1234567890abcdef"] { #expect(HTTPHeadSyntax.chunkSize(bytes(bad)) == nil, "\(bad)") }
    #expect(HTTPHeadSyntax.decimal("1776") == 1776)
    for bad in ["", "-1", "+1", "1 2", "0x10", "1234567890123456"] { #expect(HTTPHeadSyntax.decimal(bad) == nil, "\(bad)") }
  }
}
