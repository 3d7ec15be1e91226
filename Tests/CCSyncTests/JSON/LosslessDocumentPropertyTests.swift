import Testing
import CCSyncJSON
import CCSyncProcesses

/// Seeded random documents in random hand-written styles, random edits: the result always
/// parses to the new value, and the inverse edit gives back the original bytes.
@Suite struct LosslessDocumentPropertyTests {
  /// A hand-written style: indent unit, line ending, comments, trailing commas, spacing.
  struct Style {
    var unit: String
    var newline: String
    var comments: Bool
    var trailingCommas: Bool
    var colon: String
    var oneLineChance: Int  // percent of containers written on one line

    static func random(_ random: inout SeededJSONRandom, syntax: JSONSyntax) -> Style {
      Style(unit: random.pick(["  ", "    ", "\t", "\t  "]), newline: random.pick(["\n", "\r\n"]),
            comments: syntax == .jwcc && Bool.random(using: &random),
            trailingCommas: syntax == .jwcc && Bool.random(using: &random),
            colon: random.pick([": ", ":", " : "]), oneLineChance: random.pick([0, 30, 100]))
    }
  }

  /// `value` written in `style`, with comments and trailing commas where the style has them.
  static func write(_ value: JSONValue, _ style: Style, indent: String, random: inout SeededJSONRandom) -> String {
    func comment(_ multiline: Bool) -> String {
      guard style.comments, Int.random(in: 0..<3, using: &random) == 0 else { return "" }
      return multiline && Bool.random(using: &random) ? "// note \(Int.random(in: 0..<100, using: &random))" : "/* c */"
    }
    let items: [(key: String?, value: JSONValue)]
    let (open, close): (String, String)
    switch value {
    case .object(let object):
      items = object.map { (key: $0.key, value: $0.value) }
      (open, close) = ("{", "}")
    case .array(let elements):
      items = elements.map { (key: nil, value: $0) }
      (open, close) = ("[", "]")
    default:
      return value.formatted(.compact)
    }
    if items.isEmpty { return open + close }
    let oneLine = Int.random(in: 0..<100, using: &random) < style.oneLineChance
    let inner = indent + style.unit
    var text = open
    for (index, item) in items.enumerated() {
      let last = index == items.count - 1
      if oneLine {
        if index > 0 { text += " " }
        let before = comment(false)
        if !before.isEmpty { text += before + " " }
      } else {
        let above = comment(true)
        if !above.isEmpty { text += style.newline + inner + above }
        text += style.newline + inner
      }
      if let key = item.key {
        text += JSONValue.string(key).formatted(.compact)
        let between = comment(false)
        text += between.isEmpty ? style.colon : " " + between + style.colon
      }
      text += write(item.value, style, indent: inner, random: &random)
      if !last || (style.trailingCommas && Bool.random(using: &random)) { text += "," }
      if !oneLine {
        let after = comment(true)
        if !after.isEmpty { text += " " + after }
      }
    }
    text += oneLine ? "" : style.newline + indent
    return text + close
  }

  /// Every path to a value in `value`.
  static func paths(_ value: JSONValue, _ prefix: [LosslessPathStep] = []) -> [[LosslessPathStep]] {
    var result = [prefix]
    switch value {
    case .object(let object):
      for member in object { result += paths(member.value, prefix + [.key(member.key)]) }
    case .array(let elements):
      for (index, element) in elements.enumerated() { result += paths(element, prefix + [.index(index)]) }
    default:
      break
    }
    return result
  }

  static func value(at path: [LosslessPathStep], in value: JSONValue) -> JSONValue? {
    var current = value
    for step in path {
      switch (current, step) {
      case (.object(let object), .key(let key)): guard let next = object[key] else { return nil }; current = next
      case (.array(let elements), .index(let index)): guard index < elements.count else { return nil }; current = elements[index]
      default: return nil
      }
    }
    return current
  }

  /// Inserts `new` at `index` of the array at `path`.
  static func inserting(_ new: JSONValue, at index: Int, intoArrayAt path: [LosslessPathStep], in value: JSONValue) -> JSONValue {
    guard case .array(var elements)? = Self.value(at: path, in: value) else { return value }
    elements.insert(new, at: index)
    return LosslessDocumentTests.setting(.array(elements), at: path, in: value)
  }

  /// One random edit of `original` and whether its inverse must restore the original bytes.
  static func edit(_ original: JSONValue, random: inout SeededJSONRandom) -> (value: JSONValue, invertible: Bool) {
    let path = random.pick(paths(original))
    let target = value(at: path, in: original)!
    switch Int.random(in: 0..<5, using: &random) {
    case 0 where !path.isEmpty:
      // Remove a member or element: its comments go with it, so the inverse need not restore.
      return (LosslessDocumentTests.setting(nil, at: path, in: original), false)
    case 1:
      if case .object(let object) = target {
        let key = "new\(object.count)" + random.pick(["", "é", "\""])
        return (LosslessDocumentTests.setting(random.value(depth: 2), at: path + [.key(key)], in: original), true)
      }
      if case .array(let elements) = target {
        let index = Int.random(in: 0...elements.count, using: &random)
        return (inserting(random.value(depth: 2), at: index, intoArrayAt: path, in: original), true)
      }
      fallthrough
    default:
      // Set a value; back to the old one restores the bytes when the old one was a scalar in
      // the printer's own spelling (the generator writes scalars so).
      let new = random.value(depth: Int.random(in: 0...2, using: &random))
      let scalar: Bool
      switch target {
      case .object, .array: scalar = false
      default: scalar = true
      }
      return (LosslessDocumentTests.setting(new, at: path, in: original), scalar)
    }
  }

  @Test(arguments: [JSONSyntax.strict, .jwcc])
  func randomEditsParseAndInvert(syntax: JSONSyntax) throws {
    var failures = 0
    for seed in 0..<2000 {
      var random = SeededJSONRandom(seed: UInt64(seed) &* 7919 &+ (syntax == .jwcc ? 1 : 0))
      let original = random.value(depth: 4)
      let style = Style.random(&random, syntax: syntax)
      let lead = style.comments && Bool.random(using: &random) ? "// header" + style.newline : ""
      let text = lead + Self.write(original, style, indent: "", random: &random) + style.newline
      let document = try LosslessJSONDocument(parsing: text, syntax: syntax)
      #expect(document.value == original)
      #expect(document.text(updatedTo: original) == text)
      // One edit, or (a third of the time) several at once, whose inverse is not checked.
      var (changed, invertible) = Self.edit(original, random: &random)
      if Int.random(in: 0..<3, using: &random) == 0 {
        for _ in 0..<Int.random(in: 1...3, using: &random) { changed = Self.edit(changed, random: &random).value }
        invertible = false
      }
      let editedText = document.text(updatedTo: changed)
      guard let edited = try? LosslessJSONDocument(parsing: editedText, syntax: syntax) else {
        Issue.record("seed \(seed): the edited text does not parse:\n\(text)\n---\n\(editedText)")
        failures += 1
        if failures > 5 { return }
        continue
      }
      let expected = changed.orderedLike(original)
      if edited.value != changed || edited.value!.formatted(.compact) != expected.formatted(.compact) {
        Issue.record("seed \(seed): edited value differs:\n\(text)\n---\n\(editedText)\n--- expected\n\(expected.formatted())")
        failures += 1
      }
      if invertible, edited.text(updatedTo: original) != text {
        Issue.record("seed \(seed): the inverse does not restore:\n\(text)\n---\n\(editedText)\n---\n\(edited.text(updatedTo: original))")
        failures += 1
      }
      if failures > 5 { return }
    }
  }

  /// On the printer's own layout, editing gives exactly what printing the new value gives.
  @Test func printerLayoutEditsPrintAsThePrinter() throws {
    var failures = 0
    for seed in 0..<2000 {
      var random = SeededJSONRandom(seed: UInt64(seed) &+ 100_000)
      let original = random.value(depth: 4)
      let text = original.formatted()
      let document = try LosslessJSONDocument(parsing: text)
      let (changed, _) = Self.edit(original, random: &random)
      let edited = document.text(updatedTo: changed)
      let expected = changed.orderedLike(original).formatted()
      if edited != expected {
        Issue.record("seed \(seed):\n\(text)---\n\(edited)---\n\(expected)")
        failures += 1
        if failures > 5 { return }
      }
    }
  }
}

extension JSONValue {
  /// `self` (a new value) with its objects' members in the order the document edit gives
  /// them: the keys of `old`'s object at the same place first, in `old`'s order, then the new
  /// ones in `self`'s order. Array elements are paired as the edit pairs them.
  func orderedLike(_ old: JSONValue) -> JSONValue {
    switch (self, old) {
    case (.object(let new), .object(let old)):
      var result = JSONObject()
      for member in old where new[member.key] != nil { result[member.key] = new[member.key]!.orderedLike(member.value) }
      for member in new where old[member.key] == nil { result[member.key] = member.value }
      return .object(result)
    case (.array(let new), .array(let old)):
      let shorter = Swift.min(old.count, new.count)
      var prefix = 0
      while prefix < shorter, old[prefix].printsIdentically(to: new[prefix]) { prefix += 1 }
      var suffix = 0
      while suffix < shorter - prefix, old[old.count - 1 - suffix].printsIdentically(to: new[new.count - 1 - suffix]) { suffix += 1 }
      var result = new
      for index in prefix..<(shorter - suffix) { result[index] = new[index].orderedLike(old[index]) }
      return .array(result)
    default:
      return self
    }
  }
}
