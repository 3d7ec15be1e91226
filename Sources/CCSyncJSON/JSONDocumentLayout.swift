import CCSyncSystem

/// Where each top-level member of a document lies in its pretty-printed text, so that a
/// version differing from a known one in a few top-level values is parsed, and printed, by
/// those values alone.
///
/// A locked read-modify-write parses the whole file and prints it whole, though a change
/// (another process's, or this one's) usually touches one setting: on a 1 KB document that
/// was most of the work done under the lock. With the layout of a version whose text is
/// exactly what the printer makes of its document (the text this process wrote), the next
/// version is compared with it byte for byte; when the bytes differ only inside top-level
/// values, only those values' text is parsed, and printing a new document copies the text of
/// every top-level value that prints the same and prints only the others.
///
/// Both shortcuts give exactly what parsing and printing the whole text give, or nothing (the
/// caller then does the whole work):
/// - ``parse(_:over:parsedAs:options:)``: the new text is the known text with some values'
///   text replaced (the bytes before the first, between them and after the last are the known
///   ones), and each replacement parses as one complete value that ends where the known text
///   resumes. JSON's grammar makes a value's text parse the same wherever it sits between a
///   member's `": "` and the `,` or newline after it, so the whole parses to the known
///   document with those values replaced. Invalid text is never accepted here: the whole-text
///   parse reports it, with its line and column.
/// - ``print(_:over:printedFrom:)``: the known text is the printer's own for the known
///   document (its layout says so), so a member that prints the same keeps its text.
///
/// The text is the printer's pretty style of a non-empty top-level object: `{`, each member on
/// a line indented by two spaces (`"key": value`, a comma after all but the last), `}` and a
/// final newline.
package struct JSONDocumentLayout: Sendable, Equatable {
  /// The offset of each member's line (its indent), then of the closing brace's line: one
  /// more entry than the object has members.
  package private(set) var lineStarts: [Int]
  /// The offset of each member's value, just after `": "`.
  package private(set) var valueStarts: [Int]

  /// How many top-level members the text has.
  package var memberCount: Int { valueStarts.count }

  /// Where member `position`'s value ends: before the `,` and newline, or for the last member
  /// before the newline that ends its line.
  package func valueEnd(_ position: Int) -> Int {
    lineStarts[position + 1] - (position + 1 < memberCount ? 2 : 1)
  }

  /// Moves the offsets of every member after `position` by `delta` bytes (the value at
  /// `position` grew or shrank by that much).
  package mutating func shift(after position: Int, by delta: Int) {
    guard delta != 0 else { return }
    for index in (position + 1)..<lineStarts.count { lineStarts[index] += delta }
    for index in (position + 1)..<valueStarts.count { valueStarts[index] += delta }
  }

  /// Room for the text of a document about `size` bytes long (the version it replaces) and a
  /// little growth, so that printing it does not grow and copy its buffer again and again.
  package static func capacity(forAbout size: Int) -> Int {
    max(1024, size + size / 16 + 64)
  }

  /// The pretty text of `value` with its layout; the layout is `nil` unless `value` is a
  /// non-empty object. The bytes are those of ``JSONValue/formattedBytes(_:)`` in pretty style.
  /// - Parameter sizeHint: the size of the version it replaces, if known (see
  ///   ``capacity(forAbout:)``).
  package static func print(_ value: JSONValue, sizeHint: Int = 0) -> (bytes: [UInt8], layout: JSONDocumentLayout?) {
    let printed = printMeasuringNesting(value, sizeHint: sizeHint)
    return (printed.bytes, printed.layout)
  }

  /// ``print(_:sizeHint:)``, with how deep the text nests arrays and objects, as the parser
  /// counts it (see ``JSONPrinter/deepestLevel``): a writer must not write what no reader
  /// accepts.
  package static func printMeasuringNesting(
    _ value: JSONValue, sizeHint: Int = 0
  ) -> (bytes: [UInt8], layout: JSONDocumentLayout?, nesting: Int) {
    var printer = JSONPrinter(style: .pretty, initialCapacity: capacity(forAbout: sizeHint))
    guard case .object(let object) = value, !object.isEmpty else {
      printer.write(value)
      return (printer.makeBytes(), nil, printer.deepestLevel)
    }
    var layout = JSONDocumentLayout(lineStarts: [], valueStarts: [])
    layout.lineStarts.reserveCapacity(object.count + 1)
    layout.valueStarts.reserveCapacity(object.count)
    printer.append(UInt8(ascii: "{"))
    object.members.withUnsafeBufferPointer { members in
      for index in members.indices {
        if index > 0 { printer.append(UInt8(ascii: ",")) }
        layout.lineStarts.append(printer.count + 1)
        printer.writeNewline(depth: 1)
        printer.writeKey(members[index].key)
        layout.valueStarts.append(printer.count)
        printer.write(members[index].value, depth: 1)
      }
    }
    layout.lineStarts.append(printer.count + 1)
    printer.writeNewline(depth: 0)
    printer.append(UInt8(ascii: "}"))
    printer.finishDocument()
    return (printer.makeBytes(), layout, max(1, printer.deepestLevel))
  }

  /// `document` printed over `known`, the text (with this layout) the printer made of
  /// `original`: a top-level member of `document` whose key and value print as in `original`
  /// keeps its text, the others are printed. `nil` when `document` is not an object with the
  /// same keys in the same order (then it is printed whole). The bytes are exactly those of
  /// ``print(_:sizeHint:)``, and so is the layout.
  package func print(_ document: JSONValue, over known: [UInt8], printedFrom original: JSONValue) -> (bytes: [UInt8], layout: JSONDocumentLayout)? {
    printMeasuringNesting(document, over: known, printedFrom: original).map { ($0.bytes, $0.layout) }
  }

  /// ``print(_:over:printedFrom:)``, with how deep the members it printed nest arrays and
  /// objects, as the parser counts it (at least 1, the document itself). The members copied
  /// keep the text, and so the nesting, of `known`, a version read or written within the limit.
  package func printMeasuringNesting(
    _ document: JSONValue, over known: [UInt8], printedFrom original: JSONValue
  ) -> (bytes: [UInt8], layout: JSONDocumentLayout, nesting: Int)? {
    guard case .object(let new) = document, case .object(let old) = original,
      new.count == memberCount, old.count == memberCount
    else { return nil }
    var changed: [Int] = []
    for position in 0..<memberCount {
      guard new[position].key.hasSameBytes(as: old[position].key) else { return nil }
      if !new[position].value.printsIdentically(to: old[position].value) { changed.append(position) }
    }
    guard !changed.isEmpty else { return (known, self, 1) }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(JSONDocumentLayout.capacity(forAbout: known.count))
    var layout = self
    var copiedUpTo = 0
    var printer = JSONPrinter(style: .pretty, initialCapacity: 256)
    known.withUnsafeBufferPointer { text in
      for position in changed {
        bytes.append(contentsOf: UnsafeBufferPointer(rebasing: text[copiedUpTo..<valueStarts[position]]))
        printer.reset()
        printer.write(new[position].value, depth: 1)
        printer.withWrittenBytes(0..<printer.count) { bytes.append(contentsOf: $0) }
        layout.shift(after: position, by: printer.count - (valueEnd(position) - valueStarts[position]))
        copiedUpTo = valueEnd(position)
      }
      bytes.append(contentsOf: UnsafeBufferPointer(rebasing: text[copiedUpTo...]))
    }
    return (bytes, layout, max(1, printer.deepestLevel))
  }

  /// `bytes` parsed by way of `known`, a text with this layout that parses to `document`,
  /// when the two texts differ only inside top-level values (not in keys or between members):
  /// only the new text of those values is parsed, from the first changed one to the last, and
  /// the text between them must be the known one. Returns the document and, when every value
  /// parsed is the printer's own text (so the whole new text is), the new text's layout.
  /// `nil` when the shortcut does not apply or a value's text is not valid JSON; the caller
  /// then parses the whole text.
  package func parse(
    _ bytes: [UInt8], over known: [UInt8], parsedAs document: JSONValue, options: JSONParser.Options = .init()
  ) -> (document: JSONValue, layout: JSONDocumentLayout?)? {
    guard case .object(var object) = document, object.count == memberCount, options.maximumDepth > 1 else { return nil }
    let (prefix, suffix) = JSONDocumentLayout.commonEnds(known, bytes)
    let changedEnd = known.count - suffix  // the changed bytes of `known` are prefix..<changedEnd
    let first = memberLine(containing: prefix)
    let last = memberLine(containing: max(prefix, changedEnd - 1))
    let delta = bytes.count - known.count
    guard valueStarts[first] <= prefix, changedEnd <= valueEnd(last) else { return nil }
    let valueOptions = JSONParser.Options(maximumDepth: options.maximumDepth - 1, duplicateKeys: options.duplicateKeys)
    var layout = self
    var canonical = true
    let parsed: Bool = bytes.withUnsafeBufferPointer { text in
      known.withUnsafeBufferPointer { knownText in
        var reader = JSONReader(input: text, options: valueOptions)
        var start = valueStarts[first]
        for position in first...last {
          guard let (value, end) = try? reader.readValue(at: start) else { return false }
          if position < last {
            // What follows, up to the next value (`,`, newline, indent, key, `: `), is the known text.
            let between = UnsafeBufferPointer(rebasing: knownText[valueEnd(position)..<valueStarts[position + 1]])
            guard end + between.count <= text.count,
              JSONKeyCache.equalBytes(text.baseAddress! + end, between.baseAddress, between.count)
            else { return false }
            layout.lineStarts[position + 1] = end + 2
            layout.valueStarts[position + 1] = end + between.count
          } else {
            guard end == valueEnd(last) + delta else { return false }
          }
          canonical = canonical && JSONDocumentLayout.printsAsIs(value, text: UnsafeBufferPointer(rebasing: text[start..<end]))
          object.modifyValue(at: position) { $0 = value }
          start = layout.valueStarts[min(position + 1, memberCount - 1)]
        }
        return true
      }
    }
    guard parsed else { return nil }
    for index in (last + 1)..<layout.lineStarts.count { layout.lineStarts[index] += delta }
    for index in (last + 1)..<layout.valueStarts.count { layout.valueStarts[index] += delta }
    return (.object(object), canonical ? layout : nil)
  }

  /// The member whose line holds `offset`: the last one whose line starts at or before it
  /// (the first member for an offset before every line).
  private func memberLine(containing offset: Int) -> Int {
    lineStarts.lastPosition(atOrBefore: offset, among: memberCount)
  }

  /// Whether the printer writes `value`, as a top-level member's value, as exactly `text`.
  private static func printsAsIs(_ value: JSONValue, text: UnsafeBufferPointer<UInt8>) -> Bool {
    var printer = JSONPrinter(style: .pretty, initialCapacity: text.count + 16)
    printer.write(value, depth: 1)
    return printer.count == text.count && printer.withWrittenBytes(0..<printer.count) { printed in
      JSONKeyCache.equalBytes(printed.baseAddress!, text.baseAddress, text.count)
    }
  }

  /// How many bytes `a` and `b` share at their start, and then at their end (the two never
  /// overlap in the shorter one).
  package static func commonEnds(_ a: [UInt8], _ b: [UInt8]) -> (prefix: Int, suffix: Int) {
    a.withUnsafeBufferPointer { a in b.withUnsafeBufferPointer { b in commonByteEnds(a, b) } }
  }
}

extension Array where Element == Int {
  /// Among the first `count` of these offsets, in ascending order, the position of the last
  /// one at or before `offset`; 0 when none is. A binary search.
  package func lastPosition(atOrBefore offset: Int, among count: Int) -> Int {
    var low = 0
    var high = count - 1
    while low < high {
      let middle = (low + high + 1) / 2
      if self[middle] <= offset { low = middle } else { high = middle - 1 }
    }
    return low
  }
}

extension JSONValue {
  /// Whether the two values print as the same text: the same kinds in the same order, keys
  /// and strings with the same bytes, numbers with the same spelling (`==` is looser: `1.50`
  /// equals `1.5`, and canonically equivalent strings are equal). Arrays and objects that
  /// share storage (a copy not changed since) are so without a look inside.
  package func printsIdentically(to other: JSONValue) -> Bool {
    switch (self, other) {
    case (.null, .null):
      return true
    case (.bool(let left), .bool(let right)):
      return left == right
    case (.number(let left), .number(let right)):
      return left.text.hasSameBytes(as: right.text)
    case (.string(let left), .string(let right)):
      return left.hasSameBytes(as: right)
    case (.array(let left), .array(let right)):
      guard left.count == right.count else { return false }
      let shared = left.withUnsafeBufferPointer { mine in right.withUnsafeBufferPointer { mine.baseAddress == $0.baseAddress } }
      if shared { return true }
      return zip(left, right).allSatisfy { $0.printsIdentically(to: $1) }
    case (.object(let left), .object(let right)):
      guard left.count == right.count else { return false }
      let shared = left.members.withUnsafeBufferPointer { mine in
        right.members.withUnsafeBufferPointer { mine.baseAddress == $0.baseAddress }
      }
      if shared { return true }
      return zip(left.members, right.members).allSatisfy {
        $0.key.hasSameBytes(as: $1.key) && $0.value.printsIdentically(to: $1.value)
      }
    default:
      return false
    }
  }
}
