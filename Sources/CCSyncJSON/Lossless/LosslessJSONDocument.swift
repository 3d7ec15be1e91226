// How a writer uses this (it replaces "parse, change, print the whole file"):
//
//   let document = try LosslessJSONDocument(parsing: currentBytes, syntax: syntax)
//   var value = document.value ?? .object(JSONObject())   // isEmpty: start from what you like
//   ... compute the new value exactly as today (set a key, merge a patch, decode/encode) ...
//   let newBytes = document.bytes(updatedTo: value)       // or text(updatedTo:)
//
// Only the bytes the change touches differ from `currentBytes`: comments, whitespace, escapes,
// number spellings, member order and trailing commas of everything else stay. When the value
// did not change, `newBytes == currentBytes` (nothing needs writing; a comment-only edit by a
// user shows as `bytes` differing while `value` is equal). The syntax comes from the file's
// name (`.jsonc`, `.hujson`: JWCC) or the user's `--jsonc`; strict JSON files stay strict.
//
// The 1 KB read-modify-write: when the current text is the printer's own layout of a version
// this process knows (the `JSONDocumentLayout` cache hits), keep that fast path: on such text
// this document renders exactly the bytes the printer prints (a property the tests check), so
// the two paths agree and the fast one costs less. Otherwise (hand-edited text) use this one;
// a writer that already has the value of the text passes it to `init(bytes:syntax:value:)`.
// With the text's `LosslessLayout` (kept with the version the writer wrote or parsed), a
// change that sets top-level values to scalars, as a settings update does, is a splice at the
// layout's offsets (`LosslessLayout.replacingScalars`), with no walk of the text.

/// A JSON or JWCC text together with the value it holds, that renders a new value by editing
/// the text rather than printing it anew: every byte a change does not touch is kept.
///
/// What is kept, byte for byte, outside the changed values: whitespace and indentation (tabs
/// or spaces, however mixed), line endings (`\r\n` too), comments, trailing commas, escapes as
/// written (`\u00e9` stays), number spellings (`1.50`, `1E+2`), member order, a UTF-8 byte
/// order mark, text before and after the top-level value.
///
/// How a change is written (``bytes(updatedTo:)``):
/// - a value that prints identically to the old one keeps its text (a set back to the old
///   value returns the original bytes);
/// - a changed scalar gets the text the printer gives it (minimal escapes, the number's text);
/// - an object that stays an object is edited member by member, an array that stays an array
///   element by element (elements shared at both ends keep their text, the middle is paired in
///   order, the rest removed or inserted where the pairs end);
/// - a removed member goes with the comment lines directly above it, its line's trailing
///   comment, its comma and its line break;
/// - a new key is appended at the end of its object (existing keys keep the document's order
///   whatever `newValue`'s order is; new keys follow `newValue`'s order among themselves);
/// - new text (members, elements, a value of another kind) looks like its neighbours: their
///   indentation, the document's indent unit, one line or one member per line, their colon
///   spacing, the document's line ending, trailing commas in JWCC when the container has one.
///
/// A byte order mark is accepted in both syntaxes (RFC 8259 forbids it, but editors on Windows
/// write it) and kept. `Sendable`; a value type that keeps its bytes and its value, no tree.
public struct LosslessJSONDocument: Sendable {
  /// The text as it was read.
  public let bytes: [UInt8]
  /// The grammar the text was read with.
  public let syntax: JSONSyntax
  /// The value the text holds, comments dropped; `nil` when the text holds none (empty, only
  /// whitespace, or in JWCC only comments).
  public let value: JSONValue?

  /// Whether the text holds no value: empty, whitespace only, or (JWCC) comments only. A writer
  /// starts from a value of its choosing; ``bytes(updatedTo:)`` then writes it after whatever
  /// comments the text has.
  public var isEmpty: Bool { value == nil }

  /// The text as it was read, as a `String` (bytes that are not UTF-8, possible only inside a
  /// JWCC comment, are replaced).
  public var text: String { String(decoding: bytes, as: UTF8.self) }

  /// Whether the text starts with a UTF-8 byte order mark (kept when rendering).
  public var hasByteOrderMark: Bool {
    bytes.withUnsafeBufferPointer { Self.byteOrderMarkLength($0) } > 0
  }

  /// How many bytes a UTF-8 byte order mark takes at the start of `text`: 3, or 0 without one.
  static func byteOrderMarkLength(_ text: UnsafeBufferPointer<UInt8>) -> Int {
    text.count >= 3 && text[0] == 0xEF && text[1] == 0xBB && text[2] == 0xBF ? 3 : 0
  }

  /// Whether `bytes` hold no value (what ``isEmpty`` says of a document read from them,
  /// without reading it): after a byte order mark, only whitespace and, in JWCC, complete
  /// comments. A scan to the first byte that is neither: text that is not empty but not valid
  /// either (an unterminated comment) holds something, which the parse then refuses.
  package static func holdsNoValue(_ bytes: [UInt8], syntax: JSONSyntax) -> Bool {
    bytes.withUnsafeBufferPointer { text in
      LosslessScanner(text: text, allowsComments: syntax == .jwcc).skipTrivia(from: byteOrderMarkLength(text)) == text.count
    }
  }

  /// Reads a document.
  /// - Parameters:
  ///   - bytes: the whole text, UTF-8.
  ///   - syntax: strict JSON or JWCC.
  ///   - options: the nesting limit and duplicate-key policy, as ``JSONParser`` takes them.
  /// - Throws: ``JSONParseError`` with the line and column of the first problem; in strict
  ///   JSON a comment or trailing comma is ``JSONParseError/Kind/comment`` or
  ///   ``JSONParseError/Kind/trailingComma``, with a message that says how to read the text as
  ///   JWCC. Empty text is not an error: see ``isEmpty``.
  public init(parsing bytes: [UInt8], syntax: JSONSyntax = .strict, options: JSONParser.Options = .init()) throws(JSONParseError) {
    self.bytes = bytes
    self.syntax = syntax
    self.value = try LosslessJSONDocument.read(bytes, syntax: syntax, options: options)
  }

  /// Reads a document from a string; see ``init(parsing:syntax:options:)-([UInt8],_,_)``.
  public init(parsing text: String, syntax: JSONSyntax = .strict, options: JSONParser.Options = .init()) throws(JSONParseError) {
    try self.init(parsing: Array(text.utf8), syntax: syntax, options: options)
  }

  /// A document whose value the caller has already read from `bytes` (with the same syntax),
  /// for a writer that parsed the text some faster way. Not checked.
  package init(bytes: [UInt8], syntax: JSONSyntax, value: JSONValue?) {
    self.bytes = bytes
    self.syntax = syntax
    self.value = value
  }

  /// The text of `newValue`, written by editing this document's text (see the type's
  /// description for what is kept). Equal to ``bytes`` when `newValue` prints identically to
  /// ``value``.
  public func bytes(updatedTo newValue: JSONValue) -> [UInt8] {
    edited(to: newValue, layout: nil).bytes
  }

  /// ``bytes(updatedTo:)``, with where the new text's top-level members lie: a writer keeps it
  /// with the version it wrote, so that its next write parses the version it then finds by
  /// the changed top-level values alone and passes over the others without a scan.
  /// - Parameter layout: where this text's top-level members lie, when known (from the edit
  ///   that wrote it, or a parse by way of a layout), or `nil`.
  /// - Returns: the new text, and its layout when the text is an object whose members were
  ///   edited in place (none added or removed); otherwise `nil`.
  package func edited(to newValue: JSONValue, layout known: LosslessLayout?) -> (bytes: [UInt8], layout: LosslessLayout?) {
    // Top-level values set to scalars (the usual write of a setting): a splice, no walk.
    if let known, let value, let spliced = known.replacingScalars(in: bytes, from: value, to: newValue) {
      return (spliced.bytes, spliced.layout)
    }
    return editedByWalk(to: newValue, layout: known)
  }

  /// ``edited(to:layout:)`` by a walk of the text, for a caller that has tried
  /// ``LosslessLayout/replacingScalars(in:from:to:)`` already.
  package func editedByWalk(to newValue: JSONValue, layout known: LosslessLayout?) -> (bytes: [UInt8], layout: LosslessLayout?) {
    bytes.withUnsafeBufferPointer { text -> (bytes: [UInt8], layout: LosslessLayout?) in
      let scanner = LosslessScanner(text: text, allowsComments: syntax == .jwcc)
      var renderer = LosslessRenderer(scanner: scanner)
      let bodyStart = hasByteOrderMark ? 3 : 0
      let style = LosslessJSONDocument.documentStyle(scanner, from: bodyStart)
      guard let value else {
        // Nothing to edit: the value is written after the text (its comments), pretty.
        var output = Array(text)
        let end = scanner.skipTrivia(from: bodyStart)
        if output[bodyStart..<end].contains(where: { !LosslessScanner.isSpace($0) }) {
          if output.last != 0x0A { output += style.newline }
        } else {
          output.removeSubrange(bodyStart...)
        }
        var printer = JSONPrinter(style: .compact)
        style.write(newValue, into: &output, printer: &printer)
        output += style.newline
        return (output, nil)
      }
      let start = scanner.skipTrivia(from: bodyStart)
      var topStyle = style
      topStyle.indent = Array(UnsafeBufferPointer(rebasing: text[scanner.lineIndent(of: start)]))
      if start < text.count, text[start] == UInt8(ascii: "{") {
        renderer.topLevelOpen = start
        renderer.knownTopLevel = known
      }
      renderer.edit(value, newValue, at: start, style: topStyle)
      let members = renderer.topLevelMembers.map(LosslessLayout.init(members:))
      if renderer.edits.isEmpty { return (bytes, known ?? members) }
      let sorted = renderer.sortedEdits
      return (renderer.apply(sorted), members?.applying(sorted))
    }
  }

  /// ``bytes(updatedTo:)`` as a `String`.
  public func text(updatedTo newValue: JSONValue) -> String {
    String(decoding: bytes(updatedTo: newValue), as: UTF8.self)
  }

  /// The document's own style for new text at the top level: its line ending, its indent
  /// unit (from the first member of the top-level container that has its own line, two spaces
  /// when none does), one member per line, `": "`.
  private static func documentStyle(_ scanner: LosslessScanner, from start: Int) -> LosslessStyle {
    let text = scanner.text
    var newline = lineFeed
    var index = start
    while index < text.count, text[index] != 0x0A { index += 1 }
    if index < text.count, index > 0, text[index - 1] == 0x0D { newline = carriageReturnLineFeed }
    return LosslessStyle(newline: newline, unit: indentUnit(scanner, from: start), indent: [], multiline: true,
                         colon: colonAndSpace, separator: space, trailingCommas: false)
  }

  // Shared, so that a render allocates none of them.
  private static let lineFeed: [UInt8] = [0x0A]
  private static let carriageReturnLineFeed: [UInt8] = [0x0D, 0x0A]
  private static let colonAndSpace: [UInt8] = [UInt8(ascii: ":"), 0x20]
  private static let space: [UInt8] = [0x20]
  private static let commonUnits: [[UInt8]] = [[0x20, 0x20], [0x20, 0x20, 0x20, 0x20], [0x09]]

  /// The indentation the first containers of the document add for their first member.
  private static func indentUnit(_ scanner: LosslessScanner, from start: Int) -> [UInt8] {
    let text = scanner.text
    var open = scanner.skipTrivia(from: start)
    for _ in 0..<16 {
      guard open < text.count, text[open] == UInt8(ascii: "{") || text[open] == UInt8(ascii: "[") else { break }
      let first = scanner.skipTrivia(from: open + 1)
      guard first < text.count, text[first] != UInt8(ascii: "}"), text[first] != UInt8(ascii: "]") else { break }
      let outer = scanner.lineIndent(of: open)
      if let inner = scanner.indent(before: first), inner.count > outer.count {
        let unit = UnsafeBufferPointer(rebasing: text[(inner.lowerBound + outer.count)..<inner.upperBound])
        return commonUnits.first { $0.elementsEqual(unit) } ?? Array(unit)
      }
      if text[open] == UInt8(ascii: "{") {
        let colon = scanner.skipTrivia(from: scanner.stringEnd(from: first))
        open = scanner.skipTrivia(from: colon + 1)
      } else {
        open = first
      }
    }
    return commonUnits[0]
  }

  /// The value of `bytes`, `nil` when it holds none. A byte order mark is passed over; error
  /// positions count from the start of `bytes`, mark included.
  private static func read(_ bytes: [UInt8], syntax: JSONSyntax, options: JSONParser.Options) throws(JSONParseError) -> JSONValue? {
    let result: Result<JSONValue?, JSONParseError> = bytes.withUnsafeBufferPointer { whole in
      let skipped = byteOrderMarkLength(whole)
      let body = UnsafeBufferPointer(rebasing: whole[skipped...])
      var reader = JSONReader(input: body, options: options, syntax: syntax)
      do throws(JSONParseError) {
        return .success(try reader.readDocument())
      } catch {
        if error.kind == .emptyDocument { return .success(nil) }
        var error = error
        error.offset += skipped
        if error.line == 1 { error.column += skipped }
        return .failure(error)
      }
    }
    return try result.get()
  }
}
