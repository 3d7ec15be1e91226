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

  @Test func paddingReadsAsTheBytesItStandsFor() {
    #expect(Base64.decoded("") == [])
    #expect(Base64.decoded("Zg==") == Array("f".utf8))
    #expect(Base64.decoded("Zm8=") == Array("fo".utf8))
    #expect(Base64.decoded("Zm9vYmFy") == Array("foobar".utf8))
  }
}
