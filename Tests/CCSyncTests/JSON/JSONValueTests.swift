import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

@Suite struct JSONValueTests {
  /// Exponents at the edge of `Int`'s range are valid JSON: comparing, hashing and reading
  /// such numbers as integers must not trap (a file holding one would otherwise crash every
  /// process watching it, which compares versions). Run in a child process (an exit test), so
  /// a trap fails this test alone.
  @Test func hugeExponentsAreHandledWithoutTrapping() async {
    await #expect(processExitsWith: .success) {
      struct Port: Decodable { var port: Int }
      let texts = ["0.5e-9223372036854775808", "5e-9223372036854775809", "10e9223372036854775807",
                   "1e9223372036854775807", "-1.0e-9223372036854775808", "1e99999999999999999999"]
      let values = texts.map { try! JSONValue(parsing: $0) }
      for value in values {
        var hasher = Hasher()
        value.hash(into: &hasher)
        _ = values.map { $0 == value }
        precondition(value.numberValue?.int64Value == nil && value.numberValue?.uint64Value == nil)
        precondition((try? JSONValueDecoder().decode(Port.self, from: ["port": value])) == nil)
      }
    }
  }

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

  /// Plain integers compare by their values, without the decimal parts; the answer is the same.
  @Test func integerComparisonAgreesWithTheDecimalOne() {
    let texts = ["0", "-0", "1", "-1", "10", "1e1", "10.0", "100", "1E2", "-5", "-5.0",
                 "9223372036854775807", "999999999999999999", "1000000000000000000", "1e18"]
    for left in texts {
      for right in texts {
        let (a, b) = (JSONNumber(text: left)!, JSONNumber(text: right)!)
        #expect((a == b) == (DecimalParts(left) == DecimalParts(right)), "\(left) == \(right)")
      }
    }
    #expect(JSONNumber(text: "12")! != JSONNumber(text: "21")!)
  }

  @Test func numberIntegerViews() {
    #expect(JSONNumber(text: "1e3")!.int64Value == 1000)
    #expect(JSONNumber(text: "10.0")!.int64Value == 10)
    #expect(JSONNumber(text: "1.5")!.int64Value == nil)
    #expect(JSONNumber(text: "-9223372036854775808")!.int64Value == Int64.min)
    #expect(JSONNumber(text: "9223372036854775808")!.int64Value == nil)
    #expect(JSONNumber(text: "18446744073709551615")!.uint64Value == UInt64.max)
  }

  /// The decoder's fast paths agree with the standard library's parsers, bit for bit.
  @Test func numberFastPathsAgreeWithTheStandardLibrary() {
    var texts = ["0", "-0", "1", "-1", "1.5", "1.50", "0.1", "0.2", "0.3", "123.456", "-98.7654321",
                 "999999999999999", "9999999999999999", "0.000000000000000000001", "1e5", "1E+2",
                 "12345678901234567890", "-9223372036854775808", "9223372036854775807",
                 "18446744073709551615", "18446744073709551616", "0.1234567890123456789",
                 "100000000000000000", "-100000000000000000", "4.35", "2.675", "1.005"]
    var random = SeededJSONRandom(seed: 7)
    for _ in 0..<2000 {
      let integer = String(random.next() % 1_000_000_000_000)
      let fraction = String(random.next() % 10_000_000)
      texts.append((random.next() % 2 == 0 ? "-" : "") + integer + "." + fraction)
      texts.append(String(random.next() % 100_000) + "." + String(repeating: "0", count: Int(random.next() % 6)) + fraction)
      texts.append(String(Int64(bitPattern: random.next()) >> (random.next() % 64)))
    }
    for text in texts {
      let number = JSONNumber(text: text)!
      if let fast = number.exactDoubleValue {
        #expect(fast.bitPattern == Double(text)!.bitPattern, "\(text)")
      }
      if let fast = number.plainInt64Value { #expect(fast == Int64(text), "\(text)") }
      if let fast = number.plainUInt64Value { #expect(fast == UInt64(text), "\(text)") }
      #expect(number.doubleValue.bitPattern == Double(text)!.bitPattern, "\(text)")
    }
    #expect(JSONNumber(text: "1.5")!.exactDoubleValue == 1.5)
    #expect(JSONNumber(text: "123")!.plainInt64Value == 123)
    #expect(JSONNumber(text: "1e3")!.plainInt64Value == nil)
    #expect(JSONNumber(text: "18446744073709551615")!.plainUInt64Value == UInt64.max)
    #expect(JSONNumber(text: "18446744073709551616")!.plainUInt64Value == nil)
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
