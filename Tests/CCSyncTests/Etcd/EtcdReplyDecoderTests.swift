import CCSyncJSON
import Testing
@testable import CCSyncEtcd

/// The decoders that read the gateway's key-value and watch replies straight from the bytes
/// (``EtcdScannedObject``), on the reply shapes etcd 3.4.23 sends (each captured from a
/// member), and on broken ones: every malformed or truncated reply is a clear error.
@Suite struct EtcdReplyDecoderTests {
  private static let header = #"{"cluster_id":"15118495548433857066","member_id":"13668033151171901709","revision":"1116","raft_term":"2"}"#

  /// Decodes `text` as a `Value`; `nil` for an error body.
  private func decode<Value: EtcdScannedObject>(_ text: String, as type: Value.Type, inStream: Bool = false) throws -> Value? {
    try Value.decodeReply(Array(text.utf8), inStream: inStream)
  }

  /// The error decoding `text` throws, or `nil` when it does not throw.
  private func failure<Value: EtcdScannedObject>(_ text: String, as type: Value.Type, inStream: Bool = false) -> MalformedReply? {
    do {
      _ = try Value.decodeReply(Array(text.utf8), inStream: inStream)
      return nil
    } catch {
      return error
    }
  }

  @Test func aRangeReplyGivesItsKeysAndRevision() throws {
    let text = #"{"header":\#(Self.header),"kvs":[{"key":"Zm9v","create_revision":"1115","mod_revision":"1116","version":"2","value":"YmF6"}],"count":"1"}"#
    let range = try #require(try decode(text, as: EtcdRangeResult.self))
    #expect(range.revision == 1116)
    #expect(range.count == 1)
    #expect(!range.more)
    #expect(range.keyValues == [EtcdKeyValue(key: Array("foo".utf8), value: Array("baz".utf8), createRevision: 1115, modRevision: 1116, version: 2)])
  }

  @Test func aRangeThatFoundNothingHasNoKeys() throws {
    let range = try #require(try decode(#"{"header":\#(Self.header)}"#, as: EtcdRangeResult.self))
    #expect(range.revision == 1116)
    #expect(range.keyValues.isEmpty)
    #expect(range.first == nil)
  }

  @Test func aPutReplyGivesThePreviousKey() throws {
    let text = #"{"header":\#(Self.header),"prev_kv":{"key":"Zm9v","create_revision":"1115","mod_revision":"1115","version":"1","value":"YmFy","lease":"7587"}}"#
    let put = try #require(try decode(text, as: EtcdPutResult.self))
    #expect(put.revision == 1116)
    #expect(put.previous == EtcdKeyValue(key: Array("foo".utf8), value: Array("bar".utf8), createRevision: 1115, modRevision: 1115, version: 1, lease: 7587))
    #expect(try decode(#"{"header":\#(Self.header)}"#, as: EtcdPutResult.self)?.previous == nil)
  }

  @Test func aDeleteReplyGivesTheCountAndTheDeletedKeys() throws {
    let text = #"{"header":\#(Self.header),"deleted":"1","prev_kvs":[{"key":"Zm9v","create_revision":"1115","mod_revision":"1117","version":"3","value":"eA=="}]}"#
    let delete = try #require(try decode(text, as: EtcdDeleteResult.self))
    #expect(delete.deleted == 1)
    #expect(delete.previous.map(\.value) == [Array("x".utf8)])
  }

  @Test func aFailedCompareGivesTheRangeOfTheFailureBranch() throws {
    let text = #"{"header":\#(Self.header),"responses":[{"response_range":{"header":{"revision":"1116"},"kvs":[{"key":"Zm9v","create_revision":"1115","mod_revision":"1116","version":"2","value":"YmF6"}],"count":"1"}}]}"#
    let result = try #require(try decode(text, as: EtcdTransactionResult.self))
    #expect(!result.succeeded)
    #expect(result.revision == 1116)
    guard case .range(let range)? = result.results.first else {
      Issue.record("no range in \(result.results)")
      return
    }
    #expect(range.first?.modRevision == 1116)
  }

  @Test func aSucceededTransactionGivesEachOperationsResult() throws {
    let text = #"{"header":\#(Self.header),"succeeded":true,"responses":[{"response_put":{"header":{"revision":"1117"}}},{"response_delete_range":{"header":{"revision":"1117"}}}]}"#
    let result = try #require(try decode(text, as: EtcdTransactionResult.self))
    #expect(result.succeeded)
    #expect(result.results.count == 2)
    guard case .put(let put) = result.results[0], case .delete(let delete) = result.results[1] else {
      Issue.record("not a put and a delete: \(result.results)")
      return
    }
    #expect(put.revision == 1117 && delete.deleted == 0)
  }

  @Test func aTransactionResponseOfNoKnownKindIsAnError() {
    let text = #"{"header":\#(Self.header),"responses":[{"response_other":{}}]}"#
    #expect(failure(text, as: EtcdTransactionResult.self)?.detail.contains("none of response_range") == true)
  }

  @Test func watchMessagesGiveEventsProgressAndControl() throws {
    let created = #"{"result":{"header":\#(Self.header),"created":true}}"#
    let message = try #require(try decode(created, as: EtcdWatchMessage.self, inStream: true))
    #expect(message.control.created && !message.control.canceled)
    #expect(message.response.revision == 1116 && message.response.isProgressNotification)

    let put = #"{"result":{"header":\#(Self.header),"watch_id":"3","events":[{"kv":{"key":"dw==","create_revision":"1119","mod_revision":"1120","version":"2","value":"Mg=="},"prev_kv":{"key":"dw==","create_revision":"1119","mod_revision":"1119","version":"1","value":"MQ=="}}]}}"#
    let events = try #require(try decode(put, as: EtcdWatchMessage.self, inStream: true)).response.events
    #expect(events.count == 1)
    #expect(events.first?.kind == .put)
    #expect(events.first?.keyValue.value == Array("2".utf8))
    #expect(events.first?.previous?.value == Array("1".utf8))

    let delete = #"{"result":{"header":\#(Self.header),"events":[{"type":"DELETE","kv":{"key":"dw==","mod_revision":"1121"}}]}}"#
    let deleted = try #require(try decode(delete, as: EtcdWatchMessage.self, inStream: true)).response.events.first
    #expect(deleted?.kind == .delete)
    #expect(deleted?.keyValue == EtcdKeyValue(key: Array("w".utf8), value: [], createRevision: 0, modRevision: 1121, version: 0))

    let progress = #"{"result":{"header":{"revision":"1300"}}}"#
    let notification = try #require(try decode(progress, as: EtcdWatchMessage.self, inStream: true))
    #expect(notification.response.isProgressNotification && notification.response.revision == 1300)
    #expect(!notification.control.created)
  }

  @Test func aCanceledWatchSaysWhy() throws {
    let compacted = #"{"result":{"header":{"cluster_id":"1","member_id":"2","raft_term":"2"},"canceled":true,"compact_revision":"1118"}}"#
    let message = try #require(try decode(compacted, as: EtcdWatchMessage.self, inStream: true))
    #expect(message.control.canceled && message.control.compactRevision == 1118)
    guard case .compacted(_, let revision) = message.control.cancellationError(endpoint: "member") else {
      Issue.record("not a compaction: \(message.control)")
      return
    }
    #expect(revision == 1118)

    let refused = #"{"result":{"header":\#(Self.header),"created":true,"canceled":true,"cancel_reason":"rpc error: code = PermissionDenied desc = \"etcdserver: permission denied\""}}"#
    let control = try #require(try decode(refused, as: EtcdWatchMessage.self, inStream: true)).control
    #expect(control.cancelReason == #"rpc error: code = PermissionDenied desc = "etcdserver: permission denied""#)
    guard case .permissionDenied = control.cancellationError(endpoint: "member") else {
      Issue.record("not a refusal: \(control)")
      return
    }
  }

  @Test(arguments: [
    #"{"error":"etcdserver: mvcc: required revision is a future revision","message":"etcdserver: mvcc: required revision is a future revision","code":11}"#,
    #"{"error":{"grpc_code":14,"http_code":503,"message":"transport is closing","http_status":"Service Unavailable"}}"#,
    #"{"result":{"header":{"revision":"5"}},"error":{"grpc_code":1,"message":"grpc: the client connection is closing"}}"#,
  ])
  func anErrorBodyIsLeftToTheErrorReader(_ text: String) throws {
    #expect(try decode(text, as: EtcdRangeResult.self) == nil)
    #expect(try decode(text, as: EtcdWatchMessage.self, inStream: true) == nil)
    guard case .failure = EtcdReply(body: Array(text.utf8), status: 200) else {
      Issue.record("the error reader does not read \(text)")
      return
    }
  }

  @Test func aStreamMessageWithoutResultIsReadAsTheReplyItself() throws {
    let message = try #require(try decode(#"{"header":{"revision":"9"},"created":true}"#, as: EtcdWatchMessage.self, inStream: true))
    #expect(message.control.created && message.response.revision == 9)
  }

  @Test func membersItDoesNotKnowAreSkippedWhateverTheyHold() throws {
    let text = #"{"extra":{"a":[1,-2.5e3,{"b":null,"c":[true,false,[]]}],"d":"\"}]\\"},"header":{"revision":"4","x":{}},"kvs":[],"more":false,"z":"\u00e9"}"#
    let range = try #require(try decode(text, as: EtcdRangeResult.self))
    #expect(range.revision == 4 && range.keyValues.isEmpty)
  }

  @Test func int64sAreReadAsStringsOrNumbersUpToTheirLimits() throws {
    func revision(_ value: String) throws -> Int64? {
      try decode(#"{"header":{"revision":\#(value)}}"#, as: EtcdRangeResult.self)?.revision
    }
    #expect(try revision(#""9223372036854775807""#) == .max)
    #expect(try revision(#""-9223372036854775808""#) == .min)
    #expect(try revision("42") == 42)
    #expect(try revision("null") == 0)
    for bad in [#""9223372036854775808""#, #""""#, #""-""#, #""1x""#, "1.5", #""+1""#] {
      let error = failure(#"{"header":{"revision":\#(bad)}}"#, as: EtcdRangeResult.self)
      #expect(error?.detail.contains("\"revision\" is not an integer") == true, "\(bad): \(String(describing: error))")
      #expect(error?.isSyntax == false)
    }
  }

  @Test(arguments: [
    (#"{"kvs":{}}"#, #""kvs" is an object, not an array"#),
    (#"{"kvs":[null]}"#, #""kvs" is null, not an object"#),
    (#"{"kvs":[{"value":"***"}]}"#, #""value" is not base64"#),
    (#"{"kvs":[{"key":7}]}"#, #""key" is a number, not a base64 string"#),
    (#"{"more":"yes"}"#, #""more" is a string, not a boolean"#),
    (#"{"header":[]}"#, #""header" is an array, not an object"#),
  ])
  func aMemberOfTheWrongKindIsAShapeError(_ text: String, _ detail: String) {
    let error = failure(text, as: EtcdRangeResult.self)
    #expect(error?.detail == detail)
    #expect(error?.isSyntax == false)
  }

  @Test func anEventOfUnknownTypeIsAnError() {
    let text = #"{"result":{"events":[{"type":"RENAME","kv":{}}]}}"#
    #expect(failure(text, as: EtcdWatchMessage.self, inStream: true)?.detail == #"an event of unknown type "RENAME""#)
  }

  @Test func everyTruncationOfARealReplyIsASyntaxError() {
    let replies: [(String, Bool)] = [
      (#"{"result":{"header":\#(Self.header),"events":[{"type":"DELETE","kv":{"key":"dw==","mod_revision":"1121"},"prev_kv":{"key":"dw==","create_revision":"1119","mod_revision":"1120","version":"2","value":"Mg=="}}]}}"#, true),
      (#"{"header":\#(Self.header),"succeeded":true,"responses":[{"response_put":{"header":{"revision":"1117"}}},{"response_range":{"kvs":[{"key":"Zm9v","value":"eA==","extra":[1,{"a":"b\"c"}]}]}}]}"#, false),
      (#"{"error":{"grpc_code":14,"http_code":503,"message":"transport is closing","http_status":"Service Unavailable"}}"#, true),
    ]
    for (reply, inStream) in replies {
      for length in 0..<reply.utf8.count {
        let text = String(decoding: reply.utf8.prefix(length), as: UTF8.self)
        let error = inStream ? failure(text, as: EtcdWatchMessage.self, inStream: true) : failure(text, as: EtcdTransactionResult.self)
        #expect(error?.isSyntax == true, "\(length) bytes: \(text)")
      }
    }
  }

  @Test(arguments: [
    (#"{"kvs":[{}}"#, "expected ',' or ']' at byte 10"),
    (#"{"x":[1}"#, "expected ',' or ']' at byte 7"),
    (#"{"x":{"a" 1}}"#, "expected ':' at byte 10"),
    (#"{"x":tru}"#, "expected 'true' at byte 5"),
    (#"{"x":1}{}"#, "expected the end of the reply at byte 7"),
    (#"{"x":"a"#, "the reply ends inside the string that starts at byte 5"),
    (#"{"x":"a\"#, "the reply ends inside the string that starts at byte 5"),
    (#"{"x":"a\""#, "the reply ends inside the string that starts at byte 5"),
    ("[]", "the body is not a JSON object: []"),
    ("", "the body is not a JSON object: "),
  ])
  func malformedInputIsASyntaxErrorNamingTheByte(_ text: String, _ detail: String) {
    let error = failure(text, as: EtcdRangeResult.self)
    #expect(error?.detail.hasPrefix(detail) == true, "\(String(describing: error))")
    #expect(error?.isSyntax == true)
  }

  @Test func aControlCharacterInAStringReadAsTextIsAnError() {
    let text = "{\"result\":{\"cancel_reason\":\"a\u{1}\"}}"
    let error = failure(text, as: EtcdWatchMessage.self, inStream: true)
    #expect(error?.detail.hasPrefix("expected no control character inside a string at byte 29") == true, "\(String(describing: error))")
    #expect(error?.isSyntax == true)
  }

  @Test func nestingDeeperThanTheScannerFollowsIsAnErrorNotACrash() {
    let text = #"{"x":"# + String(repeating: "[", count: 100) + String(repeating: "]", count: 100) + "}"
    #expect(failure(text, as: EtcdRangeResult.self)?.detail.contains("at most 64 levels") == true)
  }
}
