import CCSyncSystem
import CCSyncJSON

extension JSONTextEncoderImpl {
  /// A key written in an open object: the place of its quoted, escaped text in the output,
  /// and its ``JSONKeyFilter`` bit.
  struct WrittenKey {
    let start: Int
    let end: Int
    let bit: UInt64
  }

  /// Remembers `key`, just written as a member of the object at `position`, or refuses it
  /// when the object has it already: the tree would replace that member's value in place,
  /// which text already written cannot do.
  /// - Throws: ``Abandon`` for a key the object has.
  @inline(__always)
  func recordKey(_ key: WrittenKey, in position: Int) throws {
    if frames[position].keyFilter.mayContain(bit: key.bit) {
      for index in frames[position].firstKey..<writtenKeys.count where isSameKey(writtenKeys[index], key) {
        throw Abandon()
      }
    }
    frames[position].keyFilter.insert(bit: key.bit)
    writtenKeys.push(key)
  }

  /// Whether two written keys are the same key, that is have the same bytes (``ExactKey``).
  /// The printer's escaping is one-to-one, so that is when their texts are the same.
  private func isSameKey(_ earlier: WrittenKey, _ key: WrittenKey) -> Bool {
    guard earlier.bit == key.bit, earlier.end - earlier.start == key.end - key.start else { return false }
    return printer.withWrittenBytes(0..<printer.count) { output in
      JSONKeyCache.equalBytes(output.baseAddress! + earlier.start, output.baseAddress! + key.start, key.end - key.start)
    }
  }
}
