import Testing
@testable import CCSync

@Suite struct JSONValueTests {
  @Test func numbersCompareByValue() {
    #expect(JSONNumber(text: "1.50")! == JSONNumber(text: "1.5")!)
    #expect(JSONNumber(text: "1e2")! == JSONNumber(text: "100")!)
    #expect(JSONNumber(text: "-0")! == JSONNumber(text: "0")!)
    #expect(JSONNumber(text: "1.5")! != JSONNumber(text: "15")!)
    #expect(JSONNumber(text: "1.50")!.hashValue == JSONNumber(text: "1.5")!.hashValue)
    #expect(JSONNumber(text: "01") == nil)
    #expect(JSONNumber(text: "1.") == nil)
    #expect(JSONNumber(text: "12345678901234567890")!.text == "12345678901234567890")
  }

  @Test func numberIntegerViews() {
    #expect(JSONNumber(text: "1e3")!.int64Value == 1000)
    #expect(JSONNumber(text: "10.0")!.int64Value == 10)
    #expect(JSONNumber(text: "1.5")!.int64Value == nil)
    #expect(JSONNumber(text: "-9223372036854775808")!.int64Value == Int64.min)
    #expect(JSONNumber(text: "9223372036854775808")!.int64Value == nil)
    #expect(JSONNumber(text: "18446744073709551615")!.uint64Value == UInt64.max)
  }

  @Test func objectsKeepOrderAndCompareWithoutIt() {
    var object = JSONObject([("b", 1), ("a", 2)])
    object["c"] = 3
    object["b"] = 4
    #expect(object.keys == ["b", "a", "c"])
    #expect(object == JSONObject([("a", 2), ("c", 3), ("b", 4)]))
    #expect(object.hashValue == JSONObject([("a", 2), ("c", 3), ("b", 4)]).hashValue)
    object["a"] = nil
    #expect(object.keys == ["b", "c"])
  }

  @Test func largeObjectsUseTheIndex() {
    var object = JSONObject()
    for i in 0..<100 { object["k\(i)"] = .number(JSONNumber(i)) }
    #expect(object["k57"] == 57)
    object.removeValue(forKey: "k3")
    #expect(object["k57"] == 57)
    #expect(object.position(of: "k4") == 3)
    #expect(object.count == 99)
  }
}
