/// Standard base64 with padding (RFC 4648 section 4), the form etcd's gateway gives `bytes`
/// fields in: every key and value of a request and a reply goes through it. Written here
/// rather than taken from Foundation's `Data`: that was a third of the cost of encoding a
/// request, and its first use instantiated Foundation's generic metadata, a scan of every
/// protocol conformance in the process, in each short-lived `ccsync get`.
package enum Base64 {
  /// `bytes` encoded.
  package static func encoded(_ bytes: [UInt8]) -> String {
    let length = (bytes.count + 2) / 3 * 4
    if length == 0 { return "" }
    return String(unsafeUninitializedCapacity: length) { output in
      bytes.withUnsafeBufferPointer { input in
        alphabet.withUnsafeBufferPointer { alphabet in
          func put(_ group: UInt32, at position: Int, sextets: Int) {
            for sextet in 0..<4 {
              output[position + sextet] = sextet < sextets ? alphabet[Int(group >> UInt32(18 - 6 * sextet) & 63)] : padding
            }
          }
          var index = 0
          var written = 0
          while index + 3 <= input.count {
            put(UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8 | UInt32(input[index + 2]), at: written, sextets: 4)
            index += 3
            written += 4
          }
          switch input.count - index {
          case 1: put(UInt32(input[index]) << 16, at: written, sextets: 2)
          case 2: put(UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8, at: written, sextets: 3)
          default: break
          }
          return length
        }
      }
    }
  }

  /// `text` decoded, or `nil` when it is not standard base64 with padding: a length that is
  /// not a multiple of 4, a character outside the alphabet, or padding anywhere but at the
  /// end (as Foundation's `Data(base64Encoded:)` judges it).
  package static func decoded(_ text: String) -> [UInt8]? {
    var text = text
    return text.withUTF8 { decoded($0) }
  }

  /// `text`'s bytes decoded; see ``decoded(_:)-(String)``.
  package static func decoded(_ text: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
    guard text.count % 4 == 0 else { return nil }
    if text.isEmpty { return [] }
    var padded = 0
    if text[text.count - 1] == padding { padded += 1 }
    if text[text.count - 2] == padding { padded += 1 }
    let count = text.count / 4 * 3 - padded
    var failed = false
    let bytes = [UInt8](unsafeUninitializedCapacity: count) { output, initialized in
      decodingTable.withUnsafeBufferPointer { table in
        var written = 0
        var index = 0
        groups: while index < text.count {
          // The padding of the last group reads as zero bits; anywhere else it is an error.
          let paddingFrom = index + 4 == text.count ? 4 - padded : 4
          var group: UInt32 = 0
          for offset in 0..<4 {
            let value = offset >= paddingFrom ? 0 : table[Int(text[index + offset])]
            if value == invalid {
              failed = true
              break groups
            }
            group = group << 6 | UInt32(value)
          }
          output[written] = UInt8(truncatingIfNeeded: group >> 16)
          if written + 1 < count { output[written + 1] = UInt8(truncatingIfNeeded: group >> 8) }
          if written + 2 < count { output[written + 2] = UInt8(truncatingIfNeeded: group) }
          written = min(written + 3, count)
          index += 4
        }
        initialized = written
      }
    }
    return failed ? nil : bytes
  }

  private static let padding = UInt8(ascii: "=")

  private static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

  /// A byte's value in the alphabet, or ``invalid``.
  private static let invalid: UInt8 = 0xff

  private static let decodingTable: [UInt8] = {
    var table = [UInt8](repeating: invalid, count: 256)
    for (value, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(value) }
    return table
  }()
}
