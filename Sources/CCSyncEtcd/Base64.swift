/// Standard base64 with padding (RFC 4648 section 4), the form etcd's gateway gives `bytes`
/// fields in: every key and value of a request and a reply goes through it. Written here
/// rather than taken from Foundation's `Data`: that was a third of the cost of encoding a
/// request, and its first use instantiated Foundation's generic metadata, a scan of every
/// protocol conformance in the process, in each short-lived `ccsync get`.
package enum Base64 {
  /// `bytes` encoded.
  package static func encoded(_ bytes: [UInt8]) -> String {
    let length = encodedCount(bytes.count)
    if length == 0 { return "" }
    return String(unsafeUninitializedCapacity: length) { output in
      bytes.withUnsafeBufferPointer { encode($0, into: output) }
      return length
    }
  }

  /// Appends `bytes` encoded to `output`, through a buffer on the stack: no array or string
  /// is made for the encoded text (a request body is written this way).
  package static func encode(_ bytes: [UInt8], appendingTo output: inout [UInt8]) {
    // 3 KiB of input at a time, 4 KiB of text: a whole number of groups.
    let chunk = 3072
    bytes.withUnsafeBufferPointer { input in
      withUnsafeTemporaryAllocation(of: UInt8.self, capacity: encodedCount(min(input.count, chunk))) { text in
        var start = 0
        while start < input.count {
          let end = min(start + chunk, input.count)
          let length = encodedCount(end - start)
          encode(UnsafeBufferPointer(rebasing: input[start..<end]), into: UnsafeMutableBufferPointer(rebasing: text[..<length]))
          output.append(contentsOf: UnsafeBufferPointer(rebasing: text[..<length]))
          start = end
        }
      }
    }
  }

  /// How many characters `count` bytes encode to.
  package static func encodedCount(_ count: Int) -> Int {
    (count + 2) / 3 * 4
  }

  /// Encodes `input` into `output`, which holds exactly ``encodedCount(_:)`` characters.
  private static func encode(_ input: UnsafeBufferPointer<UInt8>, into output: UnsafeMutableBufferPointer<UInt8>) {
    let whole = input.count / 3
    // The groups encoded through the pair table: all of a long input, none of a short one.
    let paired = whole >= pairTableThreshold ? whole : 0
    if paired > 0 {
      // Each group's 24 bits are two 12-bit halves, each looked up as its two characters,
      // and stored as one 32-bit word: two loads and one store for four characters.
      characterPairs.withUnsafeBufferPointer { pairs in
        let raw = UnsafeMutableRawPointer(output.baseAddress!)
        for group in 0..<paired {
          let value = UInt32(input[3 * group]) << 16 | UInt32(input[3 * group + 1]) << 8 | UInt32(input[3 * group + 2])
          let word = UInt32(pairs[Int(value >> 12)]) | UInt32(pairs[Int(value & 0xfff)]) << 16
          raw.storeBytes(of: UInt32(littleEndian: word), toByteOffset: 4 * group, as: UInt32.self)
        }
      }
    }
    alphabet.withUnsafeBufferPointer { alphabet in
      for group in paired..<whole {
        let value = UInt32(input[3 * group]) << 16 | UInt32(input[3 * group + 1]) << 8 | UInt32(input[3 * group + 2])
        output[4 * group] = alphabet[Int(value >> 18)]
        output[4 * group + 1] = alphabet[Int(value >> 12 & 63)]
        output[4 * group + 2] = alphabet[Int(value >> 6 & 63)]
        output[4 * group + 3] = alphabet[Int(value & 63)]
      }
      let left = input.count - 3 * whole
      guard left > 0 else { return }
      let second = left == 2 ? UInt32(input[3 * whole + 1]) << 8 : 0
      let value = UInt32(input[3 * whole]) << 16 | second
      output[4 * whole] = alphabet[Int(value >> 18)]
      output[4 * whole + 1] = alphabet[Int(value >> 12 & 63)]
      output[4 * whole + 2] = left == 2 ? alphabet[Int(value >> 6 & 63)] : padding
      output[4 * whole + 3] = padding
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
    var invalid: UInt32 = 0
    let bytes = [UInt8](unsafeUninitializedCapacity: count) { output, initialized in
      groupTables.withUnsafeBufferPointer { tables in
        // A group's four characters, looked up in the four tables, OR into its three bytes,
        // in memory order, in the low three bytes of a word; an invalid character sets the
        // top byte. Every group but the last is stored as a whole word, whose fourth byte the
        // next group's store replaces: one store instead of three.
        let raw = UnsafeMutableRawPointer(output.baseAddress!)
        for group in 0..<whole {
          let word =
            tables[Int(text[4 * group])] | tables[256 + Int(text[4 * group + 1])]
            | tables[512 + Int(text[4 * group + 2])] | tables[768 + Int(text[4 * group + 3])]
          invalid |= word
          if 3 * group + 4 <= count {
            raw.storeBytes(of: UInt32(littleEndian: word), toByteOffset: 3 * group, as: UInt32.self)
          } else {
            output[3 * group] = UInt8(truncatingIfNeeded: word)
            output[3 * group + 1] = UInt8(truncatingIfNeeded: word >> 8)
            output[3 * group + 2] = UInt8(truncatingIfNeeded: word >> 16)
          }
        }
        if padded > 0 {
          // `XY==` is one byte, `XYZ=` two; the padding reads as zero bits.
          let third = padded == 2 ? 0 : tables[512 + Int(text[4 * whole + 2])]
          let word = tables[Int(text[4 * whole])] | tables[256 + Int(text[4 * whole + 1])] | third
          invalid |= word
          output[3 * whole] = UInt8(truncatingIfNeeded: word)
          if padded == 1 { output[3 * whole + 1] = UInt8(truncatingIfNeeded: word >> 8) }
        }
      }
      initialized = count
    }
    return invalid & invalidMark == 0 ? bytes : nil
  }

  private static let padding = UInt8(ascii: "=")

  private static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

  /// Inputs of at least this many groups use ``characterPairs``: a short-lived `ccsync get`,
  /// encoding only its key, does not build the table.
  private static let pairTableThreshold = 32

  /// The two characters of every 12-bit value, the first in the low byte.
  private static let characterPairs = [UInt16](unsafeUninitializedCapacity: 4096) { pairs, count in
    // Filled through pointers: a `map` over the 4096 values cost three times as much, paid
    // by every short-lived command that writes a document.
    alphabet.withUnsafeBufferPointer { alphabet in
      for first in 0..<64 {
        let low = UInt16(alphabet[first])
        for second in 0..<64 { pairs[first << 6 | second] = low | UInt16(alphabet[second]) << 8 }
      }
    }
    count = 4096
  }

  /// Set in a group table's entry for a byte outside the alphabet, padding included.
  private static let invalidMark: UInt32 = 0xff00_0000

  /// Four tables of 256 entries, one per place in a group of four characters: each byte's
  /// six bits where they land in the group's three bytes (first byte lowest), or
  /// ``invalidMark`` for a byte outside the alphabet.
  private static let groupTables: [UInt32] = {
    var tables = [UInt32](repeating: invalidMark, count: 4 * 256)
    for (value, byte) in alphabet.enumerated() {
      let bits = UInt32(value)
      tables[Int(byte)] = bits << 2
      tables[256 + Int(byte)] = bits >> 4 | (bits & 0x0f) << 12
      tables[512 + Int(byte)] = (bits >> 2) << 8 | (bits & 0x03) << 22
      tables[768 + Int(byte)] = bits << 16
    }
    return tables
  }()
}
