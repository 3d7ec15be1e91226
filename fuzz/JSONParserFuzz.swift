// libFuzzer target for the JSON parser and the path parser (see fuzz/run). Built with
// `swiftc -sanitize=fuzzer,address` together with Sources/CCSync/JSON/*.swift, so it needs
// no package product. Properties checked on every input:
// - the parser returns a value or throws JSONParseError (anything else would be a crash);
// - a parsed value prints (compact and pretty) and parses back to an equal value;
// - the same bytes read as a path expression parse or throw JSONPathError, and a parsed
//   path prints back to an equal path;
// - the same bytes (after the first, which picks a member) put in place of one top-level
//   value of a known printed document: JSONDocumentLayout's parse of the result answers only
//   when the whole parse succeeds, and then with the same document.

/// The known document the layout property edits, printed with its layout.
let layoutBase: (document: JSONValue, text: [UInt8], layout: JSONDocumentLayout) = {
  let members: [(String, JSONValue)] = [("name", .string("svc")), ("list", .array([.number(JSONNumber(1)), .null])), ("n", .bool(true))]
  let document = JSONValue.object(JSONObject(members))
  let (text, layout) = JSONDocumentLayout.print(document)
  return (document, text, layout!)
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
  let bytes = start.map { Array(UnsafeRawBufferPointer(start: $0, count: count)) } ?? []
  if let value = try? JSONValue(parsing: bytes) {
    for format in [JSONFormat.compact, .pretty] {
      guard let again = try? JSONValue(parsing: value.formattedBytes(format)), again == value else {
        fatalError("value does not print back: \(String(decoding: bytes, as: UTF8.self))")
      }
    }
  }
  if let first = bytes.first {
    let (base, known, layout) = layoutBase
    let position = Int(first) % layout.memberCount
    let edited = Array(known[..<layout.valueStarts[position]]) + bytes.dropFirst() + Array(known[layout.valueEnd(position)...])
    let shortcut = layout.parse(edited, over: known, parsedAs: base)
    switch (shortcut, try? JSONValue(parsing: edited)) {
    case (nil, _):
      break
    case (let answer?, let whole?):
      guard answer.document.printsIdentically(to: whole) else {
        fatalError("layout parse differs: \(String(decoding: edited, as: UTF8.self))")
      }
    case (_?, nil):
      fatalError("layout parse accepted invalid text: \(String(decoding: edited, as: UTF8.self))")
    }
  }
  let text = String(decoding: bytes, as: UTF8.self)
  if let path = try? JSONPath(parsing: text) {
    guard let again = try? JSONPath(parsing: path.description), again == path else {
      fatalError("path does not print back: \(text) -> \(path.description)")
    }
  }
  return 0
}
