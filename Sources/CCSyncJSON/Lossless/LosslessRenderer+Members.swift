/// Removing and inserting members for ``LosslessRenderer``: which bytes go with a member,
/// where new ones go so that removing them again gives back the original bytes.
extension LosslessRenderer {
  /// Removes the members marked in `removed` and inserts `items`, before member `before` or,
  /// when that is `nil`, after the last member that stays.
  mutating func restructure(
    _ container: LosslessScanner.Container, removed: [Bool], items: [(key: String?, value: JSONValue)], before: Int?,
    style: LosslessStyle
  ) {
    let members = container.members
    let survivors = members.indices.filter { !removed[$0] }
    let removedAny = survivors.count < members.count
    guard removedAny || !items.isEmpty else { return }
    let interior = (container.open + 1)..<container.close
    if survivors.isEmpty {
      if items.isEmpty {
        emptyContainer(container)
      } else if members.isEmpty, let place = scanner.endOfLastComment(in: interior) {
        // An empty container with comments: the new members go after the last comment, so
        // removing them again gives back the comments and the bytes around them.
        fillAfterComments(items, at: place, multiline: scanner.firstLineBreak(in: interior) != nil, style: style)
      } else {
        // Nothing of the old members stays: the container is written anew, brackets kept.
        replace(interior, with: freshInterior(items, style: style, closingIndent: style.indent))
      }
      return
    }
    var ranges: [Range<Int>] = []
    for index in members.indices where removed[index] { ranges.append(ownRange(index, in: container)) }
    let anchor = survivors.last!
    let lastRemoved = removed[members.count - 1]
    if lastRemoved, items.isEmpty, members[members.count - 1].commaEnd == nil,
      let comma = members[anchor].commaEnd
    {
      // The member that stays last loses its comma, as the removed last member had none.
      ranges.append((comma - 1)..<comma)
    }
    let inner = style.nested
    let texts = items.map { inner.item(key: $0.key, value: $0.value, printer: &printer) }
    if let before {
      insert(texts, before: before, in: container, style: style)
    } else if !items.isEmpty {
      append(texts, after: anchor, in: container, style: style)
    }
    for range in merged(ranges) { replace(range, with: []) }
  }

  /// Removes every member of a container: to `{}` (`[]`) when no comment is left inside,
  /// otherwise by member, so the comments that belong to no member stay. Comments before the
  /// first member stay the container's (`[ // plugins go here` keeps its line): everything
  /// from the last of them to the last member goes, which undoes ``fillAfterComments``.
  mutating func emptyContainer(_ container: LosslessScanner.Container) {
    let interior = (container.open + 1)..<container.close
    let members = container.members
    let ranges: [Range<Int>]
    if let place = scanner.endOfLastComment(in: container.gapBefore(0)) {
      let last = members[members.count - 1]
      var end = last.commaEnd ?? last.valueEnd
      if place.afterLineBreak, let lineBreak = scanner.firstLineBreak(in: container.gapAfter(members.count - 1)) {
        end = lineBreak + 1
      }
      ranges = [place.position..<max(place.position, end)]
    } else {
      ranges = merged(members.indices.map { ownRange($0, in: container) })
    }
    var rest = interior.lowerBound
    var commentLeft = false
    for range in ranges {
      if scanner.hasComment(in: rest..<max(rest, range.lowerBound)) { commentLeft = true }
      rest = max(rest, range.upperBound)
    }
    if scanner.hasComment(in: rest..<max(rest, interior.upperBound)) { commentLeft = true }
    if commentLeft {
      for range in ranges { replace(range, with: []) }
    } else {
      replace(interior, with: [])
    }
  }

  /// The bytes that go with member `index` when it is removed: the comment lines directly
  /// above it, its line with its comma and any comment after it, and the line break that
  /// ends it; on one line, the member, its comma and the space before it.
  func ownRange(_ index: Int, in container: LosslessScanner.Container) -> Range<Int> {
    let members = container.members
    let member = members[index]
    let before = container.gapBefore(index)
    let start: Int
    if let lineBreak = scanner.firstLineBreak(in: before) {
      start = scanner.leadingCommentsStart(in: before, after: lineBreak)
    } else if index == 0 {
      // On the opening bracket's line, comments before the first member stay the container's.
      start = scanner.lastCommentEnd(in: before) ?? scanner.firstNonSpace(in: before)
    } else {
      start = members[index - 1].commaEnd ?? member.start
    }
    let after = container.gapAfter(index)
    let end: Int
    if let lineBreak = scanner.firstLineBreak(in: after) {
      end = lineBreak + 1
    } else if index + 1 < members.count {
      end = index == 0 ? scanner.firstNonSpace(in: after) : after.lowerBound
    } else {
      end = member.commaEnd ?? member.valueEnd
    }
    // A comma written first on the next line (`1\n, 2`) stays with the member it follows.
    let from = index > 0 ? max(start, members[index - 1].commaEnd ?? start) : start
    let to = max(end, member.commaEnd ?? end)
    return from..<max(from, to)
  }

  /// Appends `texts` (new members) after member `anchor`, the last that stays: on the lines
  /// after its line, indented as it is, or after it on its line.
  mutating func append(_ texts: [[UInt8]], after anchor: Int, in container: LosslessScanner.Container, style: LosslessStyle) {
    let member = container.members[anchor]
    let gap = container.gapAfter(anchor)
    var output: [UInt8] = []
    let position: Int
    if let lineBreak = scanner.firstLineBreak(in: gap) {
      // The new lines end as the anchor's line does (a file may mix endings): removing them
      // again then gives back the original bytes.
      let carriageReturn = lineBreak > gap.lowerBound && text[lineBreak - 1] == 0x0D
      position = max(carriageReturn ? lineBreak - 1 : lineBreak, member.commaEnd ?? 0)
      let newline: [UInt8] = carriageReturn ? [0x0D, 0x0A] : [0x0A]
      if member.commaEnd == nil { replace(member.valueEnd..<member.valueEnd, with: [UInt8(ascii: ",")]) }
      let found = scanner.indent(before: member.start)
      let indent = found == nil ? style.nested.indent : bytes(found!)
      for (index, item) in texts.enumerated() {
        output += newline
        output += indent
        output += item
        if index + 1 < texts.count || style.trailingCommas { output.append(UInt8(ascii: ",")) }
      }
    } else {
      position = member.commaEnd ?? member.valueEnd
      if member.commaEnd == nil { output.append(UInt8(ascii: ",")) }
      for (index, item) in texts.enumerated() {
        output += style.separator
        output += item
        if index + 1 < texts.count || style.trailingCommas { output.append(UInt8(ascii: ",")) }
      }
    }
    replace(position..<position, with: output)
  }

  /// Inserts `texts` (new elements) before member `index`: on lines of their own above it
  /// (and above the comments that belong to it), or on its line just after the comma before
  /// it. Either way, removing them again takes exactly what was inserted.
  mutating func insert(_ texts: [[UInt8]], before index: Int, in container: LosslessScanner.Container, style: LosslessStyle) {
    let member = container.members[index]
    let gap = container.gapBefore(index)
    var output: [UInt8] = []
    let position: Int
    if let lineBreak = scanner.firstLineBreak(in: gap) {
      position = max(scanner.leadingCommentsStart(in: gap, after: lineBreak), index > 0 ? container.members[index - 1].commaEnd ?? 0 : 0)
      let found = scanner.indent(before: member.start)
      let indent = found == nil ? style.nested.indent : bytes(found!)
      let newline: [UInt8] = lineBreak > gap.lowerBound && text[lineBreak - 1] == 0x0D ? [0x0D, 0x0A] : [0x0A]
      for item in texts {
        output += indent
        output += item
        output.append(UInt8(ascii: ","))
        output += newline
      }
    } else if index > 0, let commaEnd = container.members[index - 1].commaEnd {
      // After the comma before it: a comment before the member stays the member's.
      position = commaEnd
      for item in texts {
        output += style.separator
        output += item
        output.append(UInt8(ascii: ","))
      }
    } else {
      position = scanner.firstNonSpace(in: gap)
      for item in texts {
        output += item
        output.append(UInt8(ascii: ","))
        output += style.separator
      }
    }
    replace(position..<position, with: output)
  }

  /// Writes `items` into an empty container after its last comment (`place`, from
  /// ``LosslessScanner/endOfLastComment(in:)``): each on a line of its own (indented one unit
  /// deeper than the container's line) when the container spans lines, otherwise after the
  /// separator.
  mutating func fillAfterComments(_ items: [(key: String?, value: JSONValue)], at place: (position: Int, afterLineBreak: Bool),
                                  multiline: Bool, style: LosslessStyle) {
    let inner = style.nested
    var output: [UInt8] = []
    for (index, item) in items.enumerated() {
      if place.afterLineBreak {
        // On lines of their own after the comment's line, each ending as that line does.
        output += inner.indent
      } else if multiline {
        output += style.newline
        output += inner.indent
      } else {
        output += style.separator
      }
      output += inner.item(key: item.key, value: item.value, printer: &printer)
      if index + 1 < items.count || style.trailingCommas && multiline { output.append(UInt8(ascii: ",")) }
      if place.afterLineBreak {
        if place.position >= 2, text[place.position - 2] == 0x0D { output.append(0x0D) }
        output.append(0x0A)
      }
    }
    replace(place.position..<place.position, with: output)
  }

  /// The inside of a container written anew: `items` (already written one level deeper) on
  /// lines of their own, or on one line.
  func freshInterior(_ items: [(key: String?, value: JSONValue)], style: LosslessStyle, closingIndent: [UInt8]) -> [UInt8] {
    var printer = JSONPrinter(style: .compact, initialCapacity: 256)
    var inner = style
    inner.indent = closingIndent
    inner = inner.nested
    var output: [UInt8] = []
    for (index, item) in items.enumerated() {
      if style.multiline {
        output += style.newline
        output += inner.indent
      } else if index > 0 {
        output += style.separator
      }
      output += inner.item(key: item.key, value: item.value, printer: &printer)
      if index + 1 < items.count || (style.multiline && style.trailingCommas) { output.append(UInt8(ascii: ",")) }
    }
    if style.multiline {
      output += style.newline
      output += closingIndent
    }
    return output
  }

  /// Sorted ranges with overlapping or touching ones joined.
  func merged(_ ranges: [Range<Int>]) -> [Range<Int>] {
    var result: [Range<Int>] = []
    for range in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) where !range.isEmpty {
      if let last = result.last, range.lowerBound <= last.upperBound {
        result[result.count - 1] = last.lowerBound..<max(last.upperBound, range.upperBound)
      } else {
        result.append(range)
      }
    }
    return result
  }
}
