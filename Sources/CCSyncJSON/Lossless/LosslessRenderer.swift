/// Turns the difference between a document's value and a new value into byte edits of the
/// document's text, and applies them. The engine behind
/// ``LosslessJSONDocument/bytes(updatedTo:)``.
///
/// The walk follows the change: a value that prints identically to the old one (a copy not
/// changed since is so without a look inside) keeps its bytes and is only skipped over; a
/// scalar that changed gets new text; an object or array that stays one is edited member by
/// member (see ``editObjectInOrder(_:_:at:style:)`` and ``editArray(_:_:at:style:)``);
/// anything else is written fresh in the style of its neighbours (``LosslessStyle``).
///
/// The walk is one pass over the text: a container edited in place returns where it ends, so
/// nothing is scanned twice, and no tree of offsets is kept (a document costs its bytes and
/// its value). Edits are collected as byte ranges with their replacement and applied in one
/// copy by ``apply()``.
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
  var printer = JSONPrinter(style: .compact, initialCapacity: 256)
  /// The top-level object's opening brace, when the walk is to find where its members lie
  /// (see ``LosslessLayout``).
  package var topLevelOpen: Int?
  /// Where the top-level object's members lie in the text, when known: the values that stay
  /// are then passed over without a scan.
  package var knownTopLevel: LosslessLayout?
  /// The top-level object's members as the walk found them, when it edited them in place (no
  /// member added or removed); `nil` otherwise.
  package private(set) var topLevelMembers: [LosslessScanner.Member]?

  package init(scanner: LosslessScanner) {
    self.scanner = scanner
  }

  var text: UnsafeBufferPointer<UInt8> { scanner.text }

  mutating func replace(_ range: Range<Int>, with replacement: [UInt8]) {
    edits.append(Edit(range: range, replacement: replacement, order: edits.count))
  }

  func bytes(_ range: Range<Int>) -> [UInt8] {
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
  mutating func editChanged(_ old: JSONValue, _ new: JSONValue, at start: Int, style: LosslessStyle) -> Int {
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
  mutating func replaceWithScalar(_ new: JSONValue, at start: Int) -> Int {
    let end = scanner.valueEnd(from: start)
    printer.reset()
    printer.write(new, depth: 0)
    let replacement = printer.withWrittenBytes(0..<printer.count) { Array($0) }
    replace(start..<end, with: replacement)
    return end
  }

  /// The style for a member's new value, learned from the members read so far and the
  /// current one (which starts at `start`, its value at `valueStart`).
  func styleForMember(open: Int, _ members: [LosslessScanner.Member], start: Int, valueStart: Int,
                              around outer: LosslessStyle) -> LosslessStyle {
    let current = LosslessScanner.Member(start: start, valueStart: valueStart, valueEnd: valueStart, commaEnd: nil, gapEnd: valueStart)
    let partial = LosslessScanner.Container(open: open, close: valueStart, members: members + [current])
    return memberStyle(learnedStyle(of: partial, around: outer), member: current)
  }

  /// Reads the comma after a value that ends at `end` and the trivia after it; returns the
  /// member and where the next one (or the closing bracket) starts.
  func finishMember(start: Int, valueStart: Int, end: Int) -> LosslessScanner.Member {
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
  mutating func editObjectInOrder(_ old: JSONObject, _ new: JSONObject, at open: Int, style: LosslessStyle) -> Int? {
    let isTopLevel = open == topLevelOpen
    let known = isTopLevel && knownTopLevel?.memberCount == old.count ? knownTopLevel : nil
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
          end = valueEnd(member: position, start: index, valueStart: valueStart, known: known)
        } else if newValue.isScalar {
          end = replaceWithScalar(newValue, at: valueStart)
        } else {
          let memberStyle = styleForMember(open: open, members, start: index, valueStart: valueStart, around: style)
          end = editChanged(oldValue, newValue, at: valueStart, style: memberStyle)
        }
      } else {
        removed.append(position)
        end = valueEnd(member: position, start: index, valueStart: valueStart, known: known)
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
    if isTopLevel { topLevelMembers = removed.isEmpty && added.isEmpty ? members : nil }
    return index + 1
  }

  /// The end of the value of member `position`, which starts at `start`, its value at
  /// `valueStart`: from `known` when it places the member there, otherwise by a scan.
  private func valueEnd(member position: Int, start: Int, valueStart: Int, known: LosslessLayout?) -> Int {
    if let known, known.memberStarts[position] == start, known.valueStarts[position] == valueStart {
      return known.valueEnds[position]
    }
    return scanner.valueEnd(from: valueStart)
  }

  /// ``editObjectInOrder(_:_:at:style:)`` for an object whose text repeats a key (the last
  /// value won) or escapes one: the keys are read from the text; a repeated key's earlier
  /// members stay as they are unless the key goes, and its last member is the one edited.
  mutating func editObjectByKey(_ old: JSONObject, _ new: JSONObject, at open: Int, style: LosslessStyle) -> Int {
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
  mutating func editArray(_ old: [JSONValue], _ new: [JSONValue], at open: Int, style: LosslessStyle) -> Int {
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
  func readKeys(of container: LosslessScanner.Container) -> [String] {
    var reader = JSONReader(input: text, options: JSONParser.Options())
    return container.members.map { member in
      reader.position = member.start
      return (try? reader.readString()) ?? ""
    }
  }

  // MARK: Output

  /// The edits in the order ``apply(_:)`` applies them: by where they start, then end, then
  /// in the order they were made.
  package var sortedEdits: [Edit] {
    edits.sorted {
      ($0.range.lowerBound, $0.range.upperBound, $0.order) < ($1.range.lowerBound, $1.range.upperBound, $1.order)
    }
  }

  /// The original text with `sorted` applied (``sortedEdits``).
  package func apply(_ sorted: [Edit]) -> [UInt8] {
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
  var isScalar: Bool {
    switch self {
    case .array, .object: return false
    default: return true
    }
  }
}
