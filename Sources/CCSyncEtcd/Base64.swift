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
          let whole = input.count / 3
          for group in 0..<whole {
            let value = UInt32(input[3 * group]) << 16 | UInt32(input[3 * group + 1]) << 8 | UInt32(input[3 * group + 2])
            output[4 * group] = alphabet[Int(value >> 18)]
            output[4 * group + 1] = alphabet[Int(value >> 12 & 63)]
            output[4 * group + 2] = alphabet[Int(value >> 6 & 63)]
            output[4 * group + 3] = alphabet[Int(value & 63)]
          }
          let left = input.count - 3 * whole
          if left > 0 {
            let second = left == 2 ? UInt32(input[3 * whole + 1]) << 8 : 0
            let value = UInt32(input[3 * whole]) << 16 | second
            output[4 * whole] = alphabet[Int(value >> 18)]
            output[4 * whole + 1] = alphabet[Int(value >> 12 & 63)]
            output[4 * whole + 2] = left == 2 ? alphabet[Int(value >> 6 & 63)] : padding
            output[4 * whole + 3] = padding
          }
          return length
        }
      }
    }
  }

  /// `text` decoded, or `nil` when it is not standard base64 with padding: a length that is
  /// not a multiple of 4, a character outside the alphabet, or padding anywhere but in the
  /// last two places (Foundation's `Data(base64Encoded:)` reads some of those, `Zm=v`; etcd
  /// sends none).
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
    if padded == 1 && text[text.count - 2] == padding { padded += 1 }
    let count = text.count / 4 * 3 - padded
    // Every group but a padded last one: four characters, three bytes. An invalid
    // character's value has its high bit set, collected in `invalid` and judged at the end.
    let whole = text.count / 4 - (padded > 0 ? 1 : 0)
    var invalid: UInt8 = 0
    let bytes = [UInt8](unsafeUninitializedCapacity: count) { output, initialized in
      decodingTable.withUnsafeBufferPointer { table in
        for group in 0..<whole {
          let a = table[Int(text[4 * group])], b = table[Int(text[4 * group + 1])]
          let c = table[Int(text[4 * group + 2])], d = table[Int(text[4 * group + 3])]
          invalid |= a | b | c | d
          let value = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
          output[3 * group] = UInt8(truncatingIfNeeded: value >> 16)
          output[3 * group + 1] = UInt8(truncatingIfNeeded: value >> 8)
          output[3 * group + 2] = UInt8(truncatingIfNeeded: value)
        }
        if padded > 0 {
          // `XY==` is one byte, `XYZ=` two; the padding reads as zero bits.
          let a = table[Int(text[4 * whole])], b = table[Int(text[4 * whole + 1])]
          let c = padded == 2 ? 0 : table[Int(text[4 * whole + 2])]
          invalid |= a | b | c
          let value = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6
          output[3 * whole] = UInt8(truncatingIfNeeded: value >> 16)
          if padded == 1 { output[3 * whole + 1] = UInt8(truncatingIfNeeded: value >> 8) }
        }
      }
      initialized = count
    }
    return invalid & 0x80 == 0 ? bytes : nil
  }

  private static let padding = UInt8(ascii: "=")

  private static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

  /// Each byte's value in the alphabet; 0xff (high bit set) for a byte outside it, padding
  /// included.
  private static let decodingTable: [UInt8] = {
    var table = [UInt8](repeating: 0xff, count: 256)
    for (value, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(value) }
    return table
  }()
}
