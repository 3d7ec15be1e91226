// libFuzzer target for the JSON parser and the path parser (see fuzz/run). Built with
// `swiftc -sanitize=fuzzer,address` together with Sources/CCSync/JSON/*.swift, so it needs
// no package product. Properties checked on every input:
// - the parser returns a value or throws JSONParseError (anything else would be a crash);
// - a parsed value prints (compact and pretty) and parses back to an equal value;
// - the same bytes read as a path expression parse or throw JSONPathError, and a parsed
//   path prints back to an equal path.

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
  let text = String(decoding: bytes, as: UTF8.self)
  if let path = try? JSONPath(parsing: text) {
    guard let again = try? JSONPath(parsing: path.description), again == path else {
      fatalError("path does not print back: \(text) -> \(path.description)")
    }
  }
  return 0
}
