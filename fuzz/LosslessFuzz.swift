// libFuzzer target for JWCC and the lossless document (see fuzz/run-lossless). Built with
// `swiftc -sanitize=fuzzer,address` against CCSyncJSON built with the same sanitizers. The
// first input byte picks the syntax and seeds the edit; the rest is the text. Properties
// checked on every input:
// - strict lossless reading accepts exactly what JSONParser accepts (byte order mark and
//   empty text aside), with the same value; JWCC accepts all that strict does, same value;
// - an unchanged value renders the text byte for byte;
// - a random edit (set, add a member, insert an element, remove one) renders text that parses
//   in the same syntax to the new value;
// - an added member or inserted element, removed again, gives back the original bytes (an
//   empty container comes back as `{}` or `[]`, so it is left out); a set
//   scalar, set back and set again, gives back the edited bytes (unless what it replaced
//   was an empty container, which comes back as `{}` or `[]`);
// - the layout an edit reports (where the new text's top-level members lie) is the one a scan
//   of the new text finds, and the layout does not change the edit;
// - a text parsed by way of the old text's layout (the edited text, or the old text with one
//   byte changed) is accepted only when the whole parse accepts it, with the same value and
//   the layout a scan finds.
import CCSyncJSON

/// A small deterministic generator: the edit depends only on the input.
struct FuzzRandom {
  var state: UInt64
  mutating func next(_ bound: Int) -> Int {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return Int(truncatingIfNeeded: (z ^ (z >> 31)) % UInt64(max(1, bound)))
  }
}

enum Step { case key(String), index(Int) }

func paths(_ value: JSONValue, _ prefix: [Step] = []) -> [[Step]] {
  var result = [prefix]
  switch value {
  case .object(let object): for member in object { result += paths(member.value, prefix + [.key(member.key)]) }
  case .array(let elements): for (index, element) in elements.enumerated() { result += paths(element, prefix + [.index(index)]) }
  default: break
  }
  return result
}

/// `value` with the value at `path` changed by `body` (`nil` removes it).
func changing(_ value: JSONValue, at path: ArraySlice<Step>, _ body: (JSONValue?) -> JSONValue?) -> JSONValue? {
  guard let step = path.first else { return body(value) }
  switch (value, step) {
  case (.object(var object), .key(let key)):
    object[key] = changing(object[key] ?? .null, at: path.dropFirst(), body)
    return .object(object)
  case (.array(var elements), .index(let index)) where index < elements.count:
    if let changed = changing(elements[index], at: path.dropFirst(), body) {
      elements[index] = changed
    } else {
      elements.remove(at: index)
    }
    return .array(elements)
  default:
    return value
  }
}

/// `\r\n`, `\n` or nothing: how the first line of `bytes` ends.
func firstLineEnding(_ bytes: [UInt8]) -> [UInt8] {
  guard let lineFeed = bytes.firstIndex(of: 0x0A) else { return [] }
  return lineFeed > 0 && bytes[lineFeed - 1] == 0x0D ? [0x0D, 0x0A] : [0x0A]
}

/// Text for a message: a NUL would end it.
func show(_ bytes: [UInt8]) -> String {
  String(decoding: bytes.map { $0 == 0 ? UInt8(ascii: "@") : $0 }, as: UTF8.self)
}

let newValues: [JSONValue] = [.null, true, 7, "x\u{e9}\"", .number(JSONNumber(text: "1.50")!), [], [:], [1, ["a": 2]], ["k": [true]]]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
  guard let start, count > 0 else { return 0 }
  let all = Array(UnsafeRawBufferPointer(start: start, count: count))
  let control = all[0]
  let bytes = Array(all.dropFirst())
  let syntax: JSONSyntax = control & 1 == 0 ? .strict : .jwcc

  // Acceptance agrees with the parser.
  let strict = try? LosslessJSONDocument(parsing: bytes, syntax: .strict)
  let hasMark = bytes.starts(with: [0xEF, 0xBB, 0xBF])
  if !hasMark, let strict, let value = strict.value {
    guard let parsed = try? JSONValue(parsing: bytes), parsed == value else { fatalError("strict lossless and JSONParser differ") }
  }
  if !hasMark, strict == nil || strict?.value == nil, let parsed = try? JSONValue(parsing: bytes) {
    fatalError("JSONParser accepts what strict lossless does not: \(parsed)")
  }
  if let strictValue = strict?.value {
    guard let jwcc = try? LosslessJSONDocument(parsing: bytes, syntax: .jwcc), jwcc.value == strictValue else {
      fatalError("JWCC rejects strict JSON")
    }
  }

  guard let document = try? LosslessJSONDocument(parsing: bytes, syntax: syntax), let original = document.value else { return 0 }
  guard document.bytes(updatedTo: original) == bytes else { fatalError("unchanged value changed the text") }

  var random = FuzzRandom(state: UInt64(control) &* 0x1000_0001 &+ UInt64(count))
  let candidates = paths(original)
  let path = candidates[random.next(candidates.count)]
  let newValue = newValues[random.next(newValues.count)]
  var invertible = false
  var scalarSet = false
  // An empty container set back is written `{}` or `[]`, whatever whitespace it had inside
  // (SEMANTICS, "What the new file holds"), so a set after that one may print in another style.
  var replacesEmptyContainer = false
  let changed: JSONValue?
  switch random.next(4) {
  case 0 where !path.isEmpty:
    changed = changing(original, at: path[...]) { _ in nil }
  case 1:
    invertible = true
    changed = changing(original, at: path[...]) { old in
      switch old {
      case .object(var object)?:
        // An empty container becomes `{}` again, whatever whitespace it had inside.
        invertible = !object.isEmpty
        var key = "new"
        while object[key] != nil { key += "+" }
        object[key] = newValue
        return .object(object)
      case .array(var elements)?:
        invertible = !elements.isEmpty
        elements.insert(newValue, at: random.next(elements.count + 1))
        return .array(elements)
      default:
        invertible = false
        return newValue
      }
    }
  default:
    scalarSet = true
    changed = changing(original, at: path[...]) { old in
      switch old {
      case .object(let object)? where object.isEmpty: replacesEmptyContainer = true
      case .array(let elements)? where elements.isEmpty: replacesEmptyContainer = true
      default: break
      }
      return newValue
    }
  }
  guard let changed else { return 0 }
  let edited = document.bytes(updatedTo: changed)
  guard let reread = try? LosslessJSONDocument(parsing: edited, syntax: syntax), let rereadValue = reread.value else {
    fatalError("edited text does not parse:\n\(show(bytes))\n---\n\(show(edited))")
  }
  guard rereadValue == changed else { fatalError("edited text holds another value") }
  let known = LosslessLayout.scan(bytes, syntax: syntax, document: original)
  let withLayout = document.edited(to: changed, layout: known)
  guard withLayout.bytes == edited else { fatalError("the layout changed the edit") }
  if let layout = withLayout.layout, layout != LosslessLayout.scan(edited, syntax: syntax, document: rereadValue) {
    fatalError("the edit reports another layout than its text's:\n\(show(bytes))\n---\n\(show(edited))")
  }
  if let known {
    var mutated = bytes
    let replacements = Array("01\",}] /*\na-.e".utf8)
    mutated[random.next(mutated.count)] = replacements[random.next(replacements.count)]
    for other in [edited, mutated] {
      guard let parsed = known.parse(other, over: bytes, parsedAs: original, syntax: syntax) else { continue }
      guard let whole = try? LosslessJSONDocument(parsing: other, syntax: syntax), let wholeValue = whole.value,
        parsed.document.printsIdentically(to: wholeValue),
        parsed.layout == LosslessLayout.scan(other, syntax: syntax, document: wholeValue)
      else {
        fatalError("parsed by way of the layout, not as the whole parse:\n\(show(bytes))\n---\n\(show(other))")
      }
    }
  }
  if invertible, reread.bytes(updatedTo: original) != bytes {
    fatalError("removing what was added does not restore:\n\(show(bytes))\n---\n\(show(edited))\n---\n\(show(reread.bytes(updatedTo: original)))")
  }
  if scalarSet {
    let back = reread.bytes(updatedTo: original)
    guard let backDocument = try? LosslessJSONDocument(parsing: back, syntax: syntax), backDocument.value == original else {
      fatalError("setting back does not parse to the original")
    }
    // New lines end as the document's first line does; text whose first line ending changed
    // (a container emptied to `{}` took the first one with it) may end them otherwise.
    if firstLineEnding(back) == firstLineEnding(edited), !replacesEmptyContainer, backDocument.bytes(updatedTo: changed) != edited {
      fatalError("set, back and again differs:\n\(show(edited))\n---\n\(show(backDocument.bytes(updatedTo: changed)))")
    }
  }
  return 0
}
