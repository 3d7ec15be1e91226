import Foundation
import Testing
@testable import CCSyncEtcd

/// The base64 of every key and value the etcd client sends and reads, against Foundation's.
@Suite struct EtcdBase64Tests {
  @Test func encodingAndDecodingAgreeWithFoundationForEveryLengthAndByte() throws {
    var generator = SystemRandomNumberGenerator()
    for length in 0...200 {
      let bytes = (0..<length).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
      let text = Base64.encoded(bytes)
      #expect(text == Data(bytes).base64EncodedString(), "length \(length)")
      #expect(Base64.decoded(text) == bytes, "length \(length)")
    }
    let every = (0...255).map { UInt8($0) }
    #expect(Base64.encoded(every) == Data(every).base64EncodedString())
    #expect(Base64.decoded(Data(every).base64EncodedString()) == every)
  }

  @Test(arguments: ["Zm9", "Zm9v=", "Zm=v", "Zg=v", "Z===", "====", "=Zm9", "Zm9v\n", "Zm9*", "Zg=", "Zm 9v", "é123", "Zm9v====", "Zg==Zm9v"])
  func textThatIsNotPaddedStandardBase64IsRefused(_ text: String) {
    // Stricter than Foundation, which reads `Zm=v`, `====` and `Zm9v=` as bytes: etcd only
    // ever sends canonical base64, and anything else is a malformed reply.
    #expect(Base64.decoded(text) == nil)
  }

  /// Every byte value at every place of a 64-character text gives the bytes it stands for
  /// when it is in the alphabet, and `nil` when it is not, padding included (but in the last
  /// place, where it is padding).
  @Test func everyByteAtEveryPlaceOfALongTextDecodesAsTheAlphabetSays() {
    let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    let original = (0..<48).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
    let text = Array(Base64.encoded(original).utf8)
    #expect(text.count == 64)
    for place in text.indices {
      for byte in UInt8.min...UInt8.max {
        var changed = text
        changed[place] = byte
        let decoded = changed.withUnsafeBufferPointer { Base64.decoded($0) }
        if place == 63 && byte == UInt8(ascii: "=") {
          #expect(decoded == Array(original[..<47]), "padding in the last place")
          continue
        }
        guard let value = alphabet.firstIndex(of: byte) else {
          #expect(decoded == nil, "byte \(byte) at \(place)")
          continue
        }
        // The reference: the group's 24 bits with this character's six replaced.
        var expected = original
        let group = place / 4
        var bits = UInt32(original[3 * group]) << 16 | UInt32(original[3 * group + 1]) << 8 | UInt32(original[3 * group + 2])
        let shift = UInt32(18 - 6 * (place % 4))
        bits = bits & ~(63 << shift) | UInt32(value) << shift
        expected[3 * group] = UInt8(truncatingIfNeeded: bits >> 16)
        expected[3 * group + 1] = UInt8(truncatingIfNeeded: bits >> 8)
        expected[3 * group + 2] = UInt8(truncatingIfNeeded: bits)
        #expect(decoded == expected, "byte \(byte) at \(place)")
      }
    }
  }

  /// Random bytes of many lengths, a 64 KiB value among them, come back as they were, and
  /// their text with one character more is refused (its length is no multiple of 4).
  @Test func longTextsRoundTripAndRefuseACharacterMore() {
    var generator = SystemRandomNumberGenerator()
    for length in Array(200...260) + [1024, 1025, 1026, 65_536] {
      let bytes = (0..<length).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
      let text = Base64.encoded(bytes)
      #expect(Base64.decoded(text) == bytes, "length \(length)")
      #expect(Base64.decoded(text + "A") == nil, "length \(length) + 1")
    }
  }

  @Test func paddingReadsAsTheBytesItStandsFor() {
    #expect(Base64.decoded("") == [])
    #expect(Base64.decoded("Zg==") == Array("f".utf8))
    #expect(Base64.decoded("Zm8=") == Array("fo".utf8))
    #expect(Base64.decoded("Zm9vYmFy") == Array("foobar".utf8))
  }
}
