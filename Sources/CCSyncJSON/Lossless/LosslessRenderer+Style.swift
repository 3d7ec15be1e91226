/// Learning a container's style from its text, for ``LosslessRenderer``: what new text there
/// must look like.
extension LosslessRenderer {
  /// The indentation of the line holding `offset`.
  func indentBytes(ofLineAt offset: Int) -> [UInt8] {
    bytes(scanner.lineIndent(of: offset))
  }

  /// `outer` (the style around a container) with what the container's own text shows: one
  /// line or many, its indentation unit, its colon, its separator, its trailing commas. The
  /// ``LosslessStyle/indent`` is the container's line's: its members go one unit deeper.
  func learnedStyle(of container: LosslessScanner.Container, around outer: LosslessStyle) -> LosslessStyle {
    var style = outer
    let lineIndent = scanner.lineIndent(of: container.open)
    style.indent = bytes(lineIndent)
    let members = container.members
    guard let last = members.last else {
      if scanner.firstLineBreak(in: (container.open + 1)..<container.close) != nil { style.multiline = true }
      return style
    }
    style.multiline = scanner.firstLineBreak(in: container.gapBefore(0)) != nil
      || scanner.firstLineBreak(in: container.gapAfter(members.count - 1)) != nil
    if style.multiline, let memberIndent = scanner.indent(before: last.start) {
      let member = bytes(memberIndent)
      if member.count > style.indent.count, member.starts(with: style.indent) {
        style.unit = Array(member[style.indent.count...])
      } else if member.count > 0 {
        style.indent = []
        style.unit = member
      }
    }
    if last.valueStart != last.start {
      // An object: the colon as its last member writes it, when plain.
      let keyEnd = scanner.stringEnd(from: last.start)
      let colon = bytes(keyEnd..<last.valueStart)
      if colon.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == UInt8(ascii: ":") }) { style.colon = colon }
    }
    if members.count > 1, let commaEnd = members[members.count - 2].commaEnd {
      let separator = bytes(commaEnd..<last.start)
      if separator.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { style.separator = separator }
    }
    style.trailingCommas = scanner.allowsComments && last.commaEnd != nil
    return style
  }

  /// The style for member `member`'s value: indented as the member's line.
  func memberStyle(_ containerStyle: LosslessStyle, member: LosslessScanner.Member) -> LosslessStyle {
    var style = containerStyle
    if style.multiline { style.indent = indentBytes(ofLineAt: member.start) } else { style = style.nested }
    return style
  }
}
