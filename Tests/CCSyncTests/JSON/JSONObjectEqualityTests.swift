import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

/// `JSONObject ==` takes shortcuts (a shared members buffer, members in the same order);
/// these pin down that the answer stays the order-independent one.
@Suite struct JSONObjectEqualityTests {
  let document: JSONValue = [
    "name": "demo", "port": 8080, "tls": ["enabled": false, "file": "/etc/cert.pem"],
    "servers": [["host": "a", "weight": 0.5], ["host": "b", "weight": 0.5]], "counter": 41,
  ]

  @Test func anUntouchedCopyIsEqual() {
    let copy = document
    #expect(copy == document)
  }

  @Test func anEditedCopyIsNotEqualWhereverTheEditIs() throws {
    for path in ["/counter", "/tls/enabled", "/servers/1/weight", "/name"] {
      var copy = document
      try copy.setValue("changed", at: JSONPath(parsing: path))
      #expect(copy != document, "edit at \(path)")
      #expect(document != copy, "edit at \(path)")
    }
  }

  @Test func anEditUndoneIsEqualAgain() throws {
    var copy = document
    try copy.setValue(42, at: JSONPath(parsing: "/counter"))
    try copy.setValue(41, at: JSONPath(parsing: "/counter"))
    #expect(copy == document)
  }

  @Test func memberOrderDoesNotMatter() {
    let forward = JSONObject([("a", 1), ("b", 2), ("c", 3), ("d", 4)])
    let shuffled = JSONObject([("a", 1), ("c", 3), ("b", 2), ("d", 4)])
    let reversed = JSONObject([("d", 4), ("c", 3), ("b", 2), ("a", 1)])
    #expect(forward == shuffled)
    #expect(forward == reversed)
    #expect(forward != JSONObject([("a", 1), ("c", 3), ("b", 2), ("e", 4)]))
    #expect(forward != JSONObject([("a", 1), ("c", 3), ("b", 5), ("d", 4)]))
  }

  @Test func sameKeysInOrderWithADifferentValueAfterAReorderedPart() {
    let lhs = JSONObject([("a", 1), ("b", 2), ("c", 3)])
    #expect(lhs != JSONObject([("a", 1), ("c", 3), ("b", 9)]))
    #expect(lhs != JSONObject([("a", 1), ("b", 2), ("d", 3)]))
  }
}
