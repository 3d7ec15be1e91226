/// The edit of a locked read-modify-write that sets a few settings: top-level values replaced
/// by scalars, spliced into the text by way of its layout.
extension LosslessLayout {
  /// The text of `document` made from `bytes` (the text with this layout, which holds
  /// `original`) when the two values have the same top-level keys in the same order and every
  /// top-level value that changed is now a scalar (a number, a string, `true`, `false` or
  /// `null`): each such value's text is replaced by the scalar's, and every other byte is
  /// copied, with no walk of the text and no tree built. These are exactly the bytes, and the
  /// layout, that ``LosslessJSONDocument/edited(to:layout:)`` writes by its walk (which
  /// replaces a changed top-level value by a scalar's text the same way); when nothing
  /// changed, `bytes` and this layout themselves.
  ///
  /// `nil` when the change is of another kind (a key added, removed or moved, a container
  /// written anew), or when the layout does not fit `bytes` (a key not at a member's start):
  /// the caller then walks the text.
  package func replacingScalars(
    in bytes: [UInt8], from original: JSONValue, to document: JSONValue
  ) -> (bytes: [UInt8], layout: LosslessLayout)? {
    guard case .object(let old) = original, case .object(let new) = document,
      memberCount > 0, old.count == memberCount, new.count == memberCount
    else { return nil }
    var changed: [Int] = []
    let compared: Bool = old.members.withUnsafeBufferPointer { oldMembers in
      new.members.withUnsafeBufferPointer { newMembers in
        for position in 0..<memberCount {
          // A member copied unchanged (the usual case) is the same bits: no look inside.
          if JSONObject.Member.sameRepresentation(newMembers.baseAddress! + position, oldMembers.baseAddress! + position) {
            continue
          }
          guard newMembers[position].key.hasSameBytes(as: oldMembers[position].key) else { return false }
          let value = newMembers[position].value
          if !value.printsIdentically(to: oldMembers[position].value) {
            guard value.isScalar else { return false }
            changed.append(position)
          }
        }
        return true
      }
    }
    guard compared else { return nil }
    guard !changed.isEmpty else { return (bytes, self) }
    return bytes.withUnsafeBufferPointer { text -> (bytes: [UInt8], layout: LosslessLayout)? in
      guard fits(text) else { return nil }
      var output: [UInt8] = []
      output.reserveCapacity(text.count + 32)
      var printer = JSONPrinter(style: .compact, initialCapacity: 64)
      var layout = self
      var copied = 0
      var shift = 0
      var next = 0
      for position in changed[0]..<memberCount {
        if shift != 0 {
          layout.memberStarts[position] += shift
          layout.valueStarts[position] += shift
        }
        if next < changed.count, changed[next] == position {
          next += 1
          output.append(contentsOf: UnsafeBufferPointer(rebasing: text[copied..<valueStarts[position]]))
          printer.reset()
          printer.write(new[position].value, depth: 0)
          printer.withWrittenBytes(0..<printer.count) { output.append(contentsOf: $0) }
          shift += printer.count - (valueEnds[position] - valueStarts[position])
          copied = valueEnds[position]
        }
        if shift != 0 { layout.valueEnds[position] += shift }
      }
      output.append(contentsOf: UnsafeBufferPointer(rebasing: text[copied...]))
      return (output, layout)
    }
  }

  /// Whether this layout can be the layout of `text`: its offsets in order and inside the
  /// text, each member starting with a key's quote. (A layout travels with the version it
  /// was made for; this guards the splice against one that does not.)
  private func fits(_ text: UnsafeBufferPointer<UInt8>) -> Bool {
    var previousEnd = 0
    for position in 0..<memberCount {
      let start = memberStarts[position]
      guard previousEnd <= start, start < valueStarts[position], valueStarts[position] < valueEnds[position],
        valueEnds[position] <= text.count, text[start] == UInt8(ascii: "\"")
      else { return false }
      previousEnd = valueEnds[position]
    }
    return true
  }
}
