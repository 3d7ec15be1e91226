/// Turns the difference between a document's value and a new value into byte edits of the
/// document's text, and applies them. The engine behind
/// ``LosslessJSONDocument/bytes(updatedTo:)``.
///
/// The walk follows the change: a value that prints identically to the old one (a copy not
/// changed since is so without a look inside) keeps its bytes and is only skipped over; a
/// scalar that changed gets new text; an object or array that stays one is edited member by
/// member (see ``editObject(_:_:at:style:)`` and ``editArray(_:_:at:style:)``); anything else is
/// written fresh in the style of its neighbours (``LosslessStyle``).
package struct LosslessRenderer: ~Copyable {
  /// One replacement of original bytes; `order` keeps insertions at one offset in the order
  /// they were made.
  package struct Edit {
    package var range: Range<Int>
    package var replacement: [UInt8]
    package var order: Int
  }

  package let scanner: LosslessScanner
  package private(set) var edits: [Edit] = []
  private var printer = JSONPrinter(style: .compact, initialCapacity: 256)

  package init(scanner: LosslessScanner) {
    self.scanner = scanner
  }

  private var text: UnsafeBufferPointer<UInt8> { scanner.text }

  private mutating func replace(_ range: Range<Int>, with replacement: [UInt8]) {
    edits.append(Edit(range: range, replacement: replacement, order: edits.count))
  }

  private func bytes(_ range: Range<Int>) -> [UInt8] {
    scanner.bytes(range)
  }

  // MARK: Values

  /// Edits the text of `old`, which starts at `start`, into text of `new`; returns the offset
  /// just after `old`'s text. The text is passed once: a container edited in place returns
  /// its end, so nothing on the path to a change is scanned twice.
  @discardableResult
  package mutating func edit(_ old: JSONValue, _ new: JSONValue, at start: Int, style: LosslessStyle) -> Int {
    if old.printsIdentically(to: new) { return scanner.valueEnd(from: start) }
    return editChanged(old, new, at: start, style: style)
  }

  /// ``edit(_:_:at:style:)`` for values known not to print identically.
  private mutating func editChanged(_ old: JSONValue, _ new: JSONValue, at start: Int, style: LosslessStyle) -> Int {
    // An object's text not in the order of its value (a repeated key) is found only at its
    // end; until then the in-order pass may meet a value of another shape than it expects.
    // It must not fail on it: its edits are undone by the pass that goes by the keys.
    let opening = text[start]
    switch (old, new) {
    case (.object(let oldObject), .object(let newObject)) where opening == UInt8(ascii: "{"):
      let mark = edits.count
      if let end = editObjectInOrder(oldObject, newObject, at: start, style: style) { return end }
      // Repeated or escaped keys: undo what the in-order pass did and go by the keys.
      edits.removeSubrange(mark...)
      return editObjectByKey(oldObject, newObject, at: start, style: style)
    case (.array(let oldElements), .array(let newElements)) where opening == UInt8(ascii: "["):
      return editArray(oldElements, newElements, at: start, style: style)
    default:
      let end = scanner.valueEnd(from: start)
      var output: [UInt8] = []
      style.write(new, into: &output, printer: &printer)
      replace(start..<end, with: output)
      return end
    }
  }

  /// Replaces the text of the value at `start` with `new`, a scalar, which needs no style;
  /// returns the offset just after the old text.
  private mutating func replaceWithScalar(_ new: JSONValue, at start: Int) -> Int {
    let end = scanner.valueEnd(from: start)
    printer.reset()
    printer.write(new, depth: 0)
    let replacement = printer.withWrittenBytes(0..<printer.count) { Array($0) }
    replace(start..<end, with: replacement)
    return end
  }

  /// The style for a member's new value, learned from the members read so far and the
  /// current one (which starts at `start`, its value at `valueStart`).
  private func styleForMember(open: Int, _ members: [LosslessScanner.Member], start: Int, valueStart: Int,
                              around outer: LosslessStyle) -> LosslessStyle {
    let current = LosslessScanner.Member(start: start, valueStart: valueStart, valueEnd: valueStart, commaEnd: nil, gapEnd: valueStart)
    let partial = LosslessScanner.Container(open: open, close: valueStart, members: members + [current])
    return memberStyle(learnedStyle(of: partial, around: outer), member: current)
  }

  /// Reads the comma after a value that ends at `end` and the trivia after it; returns the
  /// member and where the next one (or the closing bracket) starts.
  private func finishMember(start: Int, valueStart: Int, end: Int) -> LosslessScanner.Member {
    var index = scanner.skipTrivia(from: end)
    var commaEnd: Int?
    if index < text.count, text[index] == UInt8(ascii: ",") {
      commaEnd = index + 1
      index = scanner.skipTrivia(from: index + 1)
    }
    return LosslessScanner.Member(start: start, valueStart: valueStart, valueEnd: end, commaEnd: commaEnd, gapEnd: index)
  }

  /// Edits an object whose text has `old`'s keys, in `old`'s order, without escapes (the
  /// usual case), in one pass; `nil` when the text's keys are otherwise. Members whose key
  /// stays keep their place and are edited in place; members whose key is gone are removed
  /// with their comments and comma; new keys are appended at the end, in `new`'s order.
  private mutating func editObjectInOrder(_ old: JSONObject, _ new: JSONObject, at open: Int, style: LosslessStyle) -> Int? {
    var members: [LosslessScanner.Member] = []
    members.reserveCapacity(old.count)
    var removed: [Int] = []
    var index = scanner.skipTrivia(from: open + 1)
    while index < text.count, text[index] != UInt8(ascii: "}") {
      let position = members.count
      guard position < old.count else { return nil }
      let key = old[position].key
      let keyEnd = scanner.stringEnd(from: index)
      guard scanner.stringContent(from: index, to: keyEnd, equals: key) else { return nil }
      let valueStart = scanner.skipTrivia(from: scanner.skipTrivia(from: keyEnd) + 1)
      let newPosition = position < new.count && new[position].key.hasSameBytes(as: key) ? position : new.position(of: key)
      let end: Int
      if let newPosition {
        let oldValue = old[position].value
        let newValue = new[newPosition].value
        if oldValue.printsIdentically(to: newValue) {
          end = scanner.valueEnd(from: valueStart)
        } else if newValue.isScalar {
          end = replaceWithScalar(newValue, at: valueStart)
        } else {
          let memberStyle = styleForMember(open: open, members, start: index, valueStart: valueStart, around: style)
          end = editChanged(oldValue, newValue, at: valueStart, style: memberStyle)
        }
      } else {
        removed.append(position)
        end = scanner.valueEnd(from: valueStart)
      }
      let member = finishMember(start: index, valueStart: valueStart, end: end)
      members.append(member)
      index = member.gapEnd
    }
    guard members.count == old.count else { return nil }
    var added: [(key: String?, value: JSONValue)] = []
    if old.count - removed.count < new.count {
      for member in new where old.position(of: member.key) == nil { added.append((member.key, member.value)) }
    }
    if !removed.isEmpty || !added.isEmpty {
      let container = LosslessScanner.Container(open: open, close: index, members: members)
      var isRemoved = Array(repeating: false, count: members.count)
      for position in removed { isRemoved[position] = true }
      restructure(container, removed: isRemoved, items: added, before: nil, style: learnedStyle(of: container, around: style))
    }
    return index + 1
  }

  /// ``editObjectInOrder(_:_:at:style:)`` for an object whose text repeats a key (the last
  /// value won) or escapes one: the keys are read from the text; a repeated key's earlier
  /// members stay as they are unless the key goes, and its last member is the one edited.
  private mutating func editObjectByKey(_ old: JSONObject, _ new: JSONObject, at open: Int, style: LosslessStyle) -> Int {
    let container = scanner.container(at: open)
    let members = container.members
    let containerStyle = learnedStyle(of: container, around: style)
    let keys = readKeys(of: container)
    var lastOccurrence: [Bool] = Array(repeating: true, count: members.count)
    var seen = Set<ExactKey>()
    for index in members.indices.reversed() where !seen.insert(ExactKey(keys[index])).inserted {
      lastOccurrence[index] = false
    }
    var removed = Array(repeating: false, count: members.count)
    for index in members.indices {
      let key = keys[index]
      guard let newPosition = new.position(of: key) else {
        removed[index] = true
        continue
      }
      guard lastOccurrence[index], let oldValue = old[key] else { continue }
      let member = members[index]
      edit(oldValue, new[newPosition].value, at: member.valueStart, style: memberStyle(containerStyle, member: member))
    }
    var added: [(key: String?, value: JSONValue)] = []
    for member in new where old.position(of: member.key) == nil { added.append((member.key, member.value)) }
    restructure(container, removed: removed, items: added, before: nil, style: containerStyle)
    return container.close + 1
  }

  /// Edits an array in one pass: the elements both share at the start and at the end keep
  /// their text; between them, old and new elements are paired in order and edited in place,
  /// and what is left over is removed (old) or inserted where the pairs end (new).
  private mutating func editArray(_ old: [JSONValue], _ new: [JSONValue], at open: Int, style: LosslessStyle) -> Int {
    let shorter = min(old.count, new.count)
    var prefix = 0
    while prefix < shorter, old[prefix].printsIdentically(to: new[prefix]) { prefix += 1 }
    var suffix = 0
    while suffix < shorter - prefix, old[old.count - 1 - suffix].printsIdentically(to: new[new.count - 1 - suffix]) {
      suffix += 1
    }
    let paired = prefix..<(shorter - suffix)
    var members: [LosslessScanner.Member] = []
    members.reserveCapacity(old.count)
    var index = scanner.skipTrivia(from: open + 1)
    while index < text.count, text[index] != UInt8(ascii: "]") {
      let position = members.count
      let end: Int
      if paired.contains(position), !old[position].printsIdentically(to: new[position]) {
        if new[position].isScalar {
          let end = replaceWithScalar(new[position], at: index)
          let member = finishMember(start: index, valueStart: index, end: end)
          members.append(member)
          index = member.gapEnd
          continue
        }
        let memberStyle = styleForMember(open: open, members, start: index, valueStart: index, around: style)
        end = editChanged(old[position], new[position], at: index, style: memberStyle)
      } else {
        end = scanner.valueEnd(from: index)
      }
      let member = finishMember(start: index, valueStart: index, end: end)
      members.append(member)
      index = member.gapEnd
    }
    // Another array's text (see editChanged): the edit is undone anyway.
    guard members.count == old.count else { return index + 1 }
    let container = LosslessScanner.Container(open: open, close: index, members: members)
    let removedRange = paired.upperBound..<(old.count - suffix)
    let items = new[paired.upperBound..<(new.count - suffix)].map { (key: String?.none, value: $0) }
    if !removedRange.isEmpty || !items.isEmpty {
      var removed = Array(repeating: false, count: old.count)
      for position in removedRange { removed[position] = true }
      restructure(container, removed: removed, items: items, before: suffix > 0 && !items.isEmpty ? old.count - suffix : nil,
                  style: learnedStyle(of: container, around: style))
    }
    return index + 1
  }

  /// The keys of an object's members in text order, repeated ones included.
  private func readKeys(of container: LosslessScanner.Container) -> [String] {
    var reader = JSONReader(input: text, options: JSONParser.Options())
    return container.members.map { member in
      reader.position = member.start
      return (try? reader.readString()) ?? ""
    }
  }

  // MARK: Members

  /// Removes the members marked in `removed` and inserts `items`, before member `before` or,
  /// when that is `nil`, after the last member that stays.
  private mutating func restructure(
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
  /// otherwise by member, so the comments that belong to no member stay.
  private mutating func emptyContainer(_ container: LosslessScanner.Container) {
    let interior = (container.open + 1)..<container.close
    let ranges = merged(container.members.indices.map { ownRange($0, in: container) })
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
  private func ownRange(_ index: Int, in container: LosslessScanner.Container) -> Range<Int> {
    let members = container.members
    let member = members[index]
    let before = container.gapBefore(index)
    let start: Int
    if let lineBreak = scanner.firstLineBreak(in: before) {
      start = scanner.leadingCommentsStart(in: before, after: lineBreak)
    } else if index == 0 {
      start = scanner.firstNonSpace(in: before)
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
  private mutating func append(_ texts: [[UInt8]], after anchor: Int, in container: LosslessScanner.Container, style: LosslessStyle) {
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
  private mutating func insert(_ texts: [[UInt8]], before index: Int, in container: LosslessScanner.Container, style: LosslessStyle) {
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

  /// The inside of a container written anew: `items` (already written one level deeper) on
  /// lines of their own, or on one line.
  private func freshInterior(_ items: [(key: String?, value: JSONValue)], style: LosslessStyle, closingIndent: [UInt8]) -> [UInt8] {
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
  private func merged(_ ranges: [Range<Int>]) -> [Range<Int>] {
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

  // MARK: Style

  /// The indentation of the line holding `offset`.
  private func indentBytes(ofLineAt offset: Int) -> [UInt8] {
    bytes(scanner.lineIndent(of: offset))
  }

  /// `outer` (the style around a container) with what the container's own text shows: one
  /// line or many, its indentation unit, its colon, its separator, its trailing commas. The
  /// ``LosslessStyle/indent`` is the container's line's: its members go one unit deeper.
  private func learnedStyle(of container: LosslessScanner.Container, around outer: LosslessStyle) -> LosslessStyle {
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
  private func memberStyle(_ containerStyle: LosslessStyle, member: LosslessScanner.Member) -> LosslessStyle {
    var style = containerStyle
    if style.multiline { style.indent = indentBytes(ofLineAt: member.start) } else { style = style.nested }
    return style
  }

  // MARK: Output

  /// The original text with every edit applied.
  package func apply() -> [UInt8] {
    let sorted = edits.sorted {
      ($0.range.lowerBound, $0.range.upperBound, $0.order) < ($1.range.lowerBound, $1.range.upperBound, $1.order)
    }
    var output: [UInt8] = []
    output.reserveCapacity(text.count + sorted.reduce(0) { $0 + $1.replacement.count })
    var copied = 0
    for edit in sorted {
      let start = max(copied, edit.range.lowerBound)
      output.append(contentsOf: UnsafeBufferPointer(rebasing: text[copied..<start]))
      output += edit.replacement
      copied = max(start, edit.range.upperBound)
    }
    output.append(contentsOf: UnsafeBufferPointer(rebasing: text[copied...]))
    return output
  }
}

extension JSONValue {
  /// Whether this is neither an array nor an object.
  fileprivate var isScalar: Bool {
    switch self {
    case .array, .object: return false
    default: return true
    }
  }
}
