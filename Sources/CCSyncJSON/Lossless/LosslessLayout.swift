import CCSyncSystem

/// Where each top-level member of an object document lies in its text, whatever that text's
/// layout (indentation, comments, trailing commas): ``JSONDocumentLayout`` for a text a person
/// or another program laid out, which ``LosslessJSONDocument`` edits instead of reprinting.
///
/// With it, the next version of the text is parsed by its changed top-level values alone
/// (``parse(_:over:parsedAs:syntax:options:)``), and an edit of the text skips the unchanged
/// top-level values without scanning them (``LosslessJSONDocument/edited(to:layout:)``). A
/// writer gets the layout of the text it wrote from the edit itself, from the offsets the edit
/// passed on its way, so keeping it costs no extra pass over the text.
///
/// The member order is the text's and the document's alike: a layout is made only for an
/// object whose text has its value's keys, in its order, each once and without escapes.
package struct LosslessLayout: Sendable, Equatable {
  /// The offset of each member's key (its opening quote), in text order.
  package internal(set) var memberStarts: [Int]
  /// The offset of each member's value.
  package internal(set) var valueStarts: [Int]
  /// The offset just after each member's value.
  package internal(set) var valueEnds: [Int]

  /// How many top-level members the text has.
  package var memberCount: Int { memberStarts.count }

  /// The layout of an object's members as the scanner found them.
  package init(members: [LosslessScanner.Member]) {
    memberStarts = members.map(\.start)
    valueStarts = members.map(\.valueStart)
    valueEnds = members.map(\.valueEnd)
  }

  /// The layout of `bytes`, read as `document` in `syntax`, found by a scan of the whole text;
  /// `nil` when `document` is not a non-empty object whose text has its keys in order, each
  /// once and written without escapes. (A writer gets the layout from its edit instead.)
  package static func scan(_ bytes: [UInt8], syntax: JSONSyntax, document: JSONValue) -> LosslessLayout? {
    guard case .object(let object) = document, !object.isEmpty else { return nil }
    return bytes.withUnsafeBufferPointer { text -> LosslessLayout? in
      let scanner = LosslessScanner(text: text, allowsComments: syntax == .jwcc)
      let open = scanner.skipTrivia(from: LosslessJSONDocument.byteOrderMarkLength(text))
      guard open < text.count, text[open] == UInt8(ascii: "{") else { return nil }
      let members = scanner.container(at: open).members
      guard members.count == object.count else { return nil }
      for (position, member) in members.enumerated() {
        let keyEnd = scanner.stringEnd(from: member.start)
        guard scanner.stringContent(from: member.start, to: keyEnd, equals: object[position].key) else { return nil }
      }
      return LosslessLayout(members: members)
    }
  }

  /// The layout of the text that `edits` (sorted as ``LosslessRenderer/sortedEdits`` sorts
  /// them, and applied as ``LosslessRenderer/apply()`` applies them) make of this layout's
  /// text, when every edit lies inside one member's value; `nil` otherwise (a member added,
  /// removed or moved: the caller then keeps no layout).
  package func applying(_ edits: [LosslessRenderer.Edit]) -> LosslessLayout? {
    var layout = self
    var next = 0
    var shift = 0
    for position in 0..<memberCount {
      if next < edits.count, edits[next].range.lowerBound < valueStarts[position] { return nil }
      layout.memberStarts[position] += shift
      layout.valueStarts[position] += shift
      // The bytes the edits inside this value skip and insert, counted as `apply` counts them.
      var copied = valueStarts[position]
      while next < edits.count, edits[next].range.lowerBound < valueEnds[position] {
        let edit = edits[next]
        guard edit.range.upperBound <= valueEnds[position] else { return nil }
        let start = max(copied, edit.range.lowerBound)
        copied = max(start, edit.range.upperBound)
        shift += edit.replacement.count - (copied - start)
        next += 1
      }
      layout.valueEnds[position] += shift
    }
    return next == edits.count ? layout : nil
  }

  /// `bytes` parsed by way of `known`, a text with this layout that parses to `document` (an
  /// object with this layout's members, in order), when the two texts differ only inside
  /// top-level values: only the new text of those values is parsed, from the first changed
  /// one to the last, and the text between them (keys, colons, commas, comments) must be the
  /// known one. Returns the document and the new text's layout; `nil` when the shortcut does
  /// not apply or a value's text is not valid, and the caller parses the whole text (which
  /// reports any error with its line and column).
  ///
  /// A value's text parses the same wherever it stands after a member's colon, so the whole
  /// parses to the known document with those values replaced (see ``JSONDocumentLayout``).
  package func parse(
    _ bytes: [UInt8], over known: [UInt8], parsedAs document: JSONValue, syntax: JSONSyntax,
    options: JSONParser.Options = .init()
  ) -> (document: JSONValue, layout: LosslessLayout)? {
    guard case .object(var object) = document, object.count == memberCount, memberCount > 0, options.maximumDepth > 1 else {
      return nil
    }
    let (prefix, suffix) = JSONDocumentLayout.commonEnds(known, bytes)
    let changedEnd = known.count - suffix  // the changed bytes of `known` are prefix..<changedEnd
    guard prefix < known.count || prefix < bytes.count else { return nil }  // the same bytes: not this shortcut's case
    let first = member(containing: prefix)
    let last = member(containing: max(prefix, changedEnd - 1))
    guard valueStarts[first] <= prefix, changedEnd <= valueEnds[last] else { return nil }
    let delta = bytes.count - known.count
    let valueOptions = JSONParser.Options(maximumDepth: options.maximumDepth - 1, duplicateKeys: options.duplicateKeys)
    var layout = self
    let parsed: Bool = bytes.withUnsafeBufferPointer { text in
      known.withUnsafeBufferPointer { knownText in
        var reader = JSONReader(input: text, options: valueOptions, syntax: syntax)
        var start = valueStarts[first]
        for position in first...last {
          guard let (value, end) = try? reader.readValue(at: start) else { return false }
          layout.valueEnds[position] = end
          if position < last {
            // What follows, up to the next value (comma, comments, key, colon), is the known text.
            let between = valueStarts[position + 1] - valueEnds[position]
            guard end + between <= text.count,
              JSONKeyCache.equalBytes(text.baseAddress! + end, knownText.baseAddress! + valueEnds[position], between)
            else { return false }
            let shift = end - valueEnds[position]
            layout.memberStarts[position + 1] = memberStarts[position + 1] + shift
            layout.valueStarts[position + 1] = end + between
            start = end + between
          } else {
            guard end == valueEnds[last] + delta else { return false }
          }
          object.modifyValue(at: position) { $0 = value }
        }
        return true
      }
    }
    guard parsed else { return nil }
    for position in (last + 1)..<memberCount {
      layout.memberStarts[position] += delta
      layout.valueStarts[position] += delta
      layout.valueEnds[position] += delta
    }
    return (.object(object), layout)
  }

  /// The member whose text holds `offset`: the last one that starts at or before it (the
  /// first member for an offset before every member).
  private func member(containing offset: Int) -> Int {
    memberStarts.lastPosition(atOrBefore: offset, among: memberCount)
  }
}
