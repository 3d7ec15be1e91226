/// How new text is written into a document so that it looks like its neighbours: learned
/// from the text around the place it goes (see ``LosslessRenderer``), never configured.
///
/// Scalars are written as the printer writes them (minimal escapes, numbers as their exact
/// text), so a value set and then set back to its old value gets the bytes a writer would
/// give it, and a set back to the original returns the original text when that was the
/// writer's spelling.
package struct LosslessStyle {
  /// The document's line ending: `\r\n` when its first line ends so, otherwise `\n`.
  package var newline: [UInt8]
  /// One level of indentation: what the document's containers add to their members' lines.
  package var unit: [UInt8]
  /// The indentation of the line the value being written starts on.
  package var indent: [UInt8]
  /// Whether containers put each member on its own line.
  package var multiline: Bool
  /// What stands between a key and its value (`": "`, `":"`, `" : "`).
  package var colon: [UInt8]
  /// What follows a comma between two members on one line (`" "` or nothing).
  package var separator: [UInt8]
  /// Whether a container's last member gets a comma too (JWCC only; fresh containers get one
  /// only when multi-line).
  package var trailingCommas: Bool

  /// The style one level deeper: for the members of a container written in this one.
  package var nested: LosslessStyle {
    var style = self
    style.indent += unit
    return style
  }

  /// Writes `value` fresh, in this style, starting at a place already indented by ``indent``.
  package func write(_ value: JSONValue, into output: inout [UInt8], printer: inout JSONPrinter) {
    switch value {
    case .array(let elements) where !elements.isEmpty:
      output.append(UInt8(ascii: "["))
      let inner = nested
      for index in elements.indices {
        startItem(index, count: elements.count, into: &output)
        inner.write(elements[index], into: &output, printer: &printer)
      }
      endContainer(count: elements.count, close: UInt8(ascii: "]"), into: &output)
    case .object(let object) where !object.isEmpty:
      output.append(UInt8(ascii: "{"))
      let inner = nested
      for index in object.indices {
        startItem(index, count: object.count, into: &output)
        inner.writeMember(key: object[index].key, value: object[index].value, into: &output, printer: &printer)
      }
      endContainer(count: object.count, close: UInt8(ascii: "}"), into: &output)
    default:
      printer.reset()
      printer.write(value, depth: 0)
      printer.withWrittenBytes(0..<printer.count) { output.append(contentsOf: $0) }
    }
  }

  /// Writes `"key"`, the colon and the value, at a place already indented by ``indent``.
  package func writeMember(key: String, value: JSONValue, into output: inout [UInt8], printer: inout JSONPrinter) {
    printer.reset()
    printer.writeString(key)
    printer.withWrittenBytes(0..<printer.count) { output.append(contentsOf: $0) }
    output.append(contentsOf: colon)
    write(value, into: &output, printer: &printer)
  }

  /// The text of one new member (`key` given) or element, as ``writeMember`` or ``write``
  /// writes it.
  package func item(key: String?, value: JSONValue, printer: inout JSONPrinter) -> [UInt8] {
    var output: [UInt8] = []
    if let key {
      writeMember(key: key, value: value, into: &output, printer: &printer)
    } else {
      write(value, into: &output, printer: &printer)
    }
    return output
  }

  /// What goes before item `index` of a fresh container: the comma after the one before, and
  /// a line break and indentation or the one-line separator.
  private func startItem(_ index: Int, count: Int, into output: inout [UInt8]) {
    if index > 0 { output.append(UInt8(ascii: ",")) }
    if multiline {
      output.append(contentsOf: newline)
      output.append(contentsOf: indent)
      output.append(contentsOf: unit)
    } else if index > 0 {
      output.append(contentsOf: separator)
    }
  }

  /// What ends a fresh container of `count` items: a trailing comma in that style, the last
  /// line break, the closing bracket.
  private func endContainer(count: Int, close: UInt8, into output: inout [UInt8]) {
    if multiline {
      if trailingCommas { output.append(UInt8(ascii: ",")) }
      output.append(contentsOf: newline)
      output.append(contentsOf: indent)
    }
    output.append(close)
  }
}
