import CCSyncSystem

/// A strict RFC 8259 JSON parser that produces ``JSONValue``.
///
/// What it accepts is exactly one JSON value, optionally surrounded by whitespace (space, tab,
/// line feed, carriage return), encoded in UTF-8. It rejects, with a ``JSONParseError`` that
/// gives the line and column:
/// - anything after the value (trailing garbage, a second document);
/// - bytes that are not well-formed UTF-8 anywhere, inside strings too: overlong forms,
///   surrogates encoded in UTF-8, code points above U+10FFFF, truncated sequences;
/// - a leading byte order mark, and NUL or any other control character outside a string;
/// - control characters (below U+0020) not escaped inside a string;
/// - `\u` escapes of a lone surrogate (`"\uD800"`): a Swift `String` cannot hold one, and the
///   parser never alters data silently;
/// - arrays and objects nested deeper than ``Options/maximumDepth`` (512 by default).
///
/// Numbers keep their exact text (``JSONNumber/text``): `12345678901234567890`, `1.50`, `-0`
/// and `1E+2` print back byte for byte. Object members keep their order.
///
/// Duplicate keys: RFC 8259 allows them and leaves their meaning open. By default
/// (``DuplicateKeyPolicy/useLast``) the parser accepts them; the last value wins and stays at
/// the position of the key's first occurrence, so `{"a":1,"b":2,"a":3}` reads as
/// `{"a":3,"b":2}`. That is what JavaScript's `JSON.parse` and jq do.
/// ``DuplicateKeyPolicy/reject`` makes a repeated key an error that names the key and its
/// place. Keys are compared by their exact UTF-8 bytes: `"é"` written precomposed and as `e`
/// plus a combining accent are two different keys, as they are to every other JSON reader.
///
/// The parser does not recurse: it keeps its own stack, so no input can overflow the thread's
/// stack, whatever ``Options/maximumDepth`` is. (Swift's own recursive code that later walks
/// a very deep value, such as `==` or its release, is another matter: keep the limit in the
/// hundreds or low thousands.)
///
/// `Sendable`; parsing has no shared state, so any number of threads can parse at once.
public struct JSONParser: Sendable {
  /// What to do when one object has the same key twice.
  public enum DuplicateKeyPolicy: Sendable, Hashable {
    /// Accept the object; the last value wins, at the position of the first occurrence.
    case useLast
    /// Fail with ``JSONParseError/Kind/duplicateKey``, naming the key and its position.
    case reject
  }

  /// Settings of the parser.
  public struct Options: Sendable, Hashable {
    /// The default nesting limit, 512 levels of arrays and objects.
    public static let defaultMaximumDepth = 512

    /// The deepest nesting of arrays and objects accepted: `[[1]]` has depth 2, a scalar
    /// document depth 0. Deeper input fails with ``JSONParseError/Kind/nestingTooDeep``.
    public var maximumDepth: Int
    /// What to do with a key that occurs twice in one object.
    public var duplicateKeys: DuplicateKeyPolicy

    /// Creates options; the defaults accept what RFC 8259 accepts, up to 512 levels deep.
    /// - Parameters:
    ///   - maximumDepth: the deepest nesting accepted (at least 0).
    ///   - duplicateKeys: what to do with a repeated key in an object.
    public init(maximumDepth: Int = Options.defaultMaximumDepth, duplicateKeys: DuplicateKeyPolicy = .useLast) {
      self.maximumDepth = max(0, maximumDepth)
      self.duplicateKeys = duplicateKeys
    }
  }

  /// The settings this parser uses.
  public var options: Options

  /// Creates a parser with the given settings.
  public init(options: Options = Options()) {
    self.options = options
  }

  /// Parses one JSON document from UTF-8 bytes.
  /// - Parameter bytes: the whole document.
  /// - Returns: the value the document holds.
  /// - Throws: ``JSONParseError`` when the bytes are not exactly one valid JSON value, or break
  ///   a limit of ``options``.
  public func parse(_ bytes: UnsafeRawBufferPointer) throws(JSONParseError) -> JSONValue {
    // Reading raw memory as UInt8 is always valid: UInt8 has no alignment or invalid values.
    let input = UnsafeBufferPointer(
      start: bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), count: bytes.count)
    var reader = JSONReader(input: input, options: options)
    return try reader.readDocument()
  }

  /// Parses one JSON document from a collection of UTF-8 bytes (`[UInt8]`, `ArraySlice`,
  /// Foundation's `Data`, a `String`'s `utf8` view). Contiguous storage is read in place;
  /// anything else is copied once.
  /// - Throws: ``JSONParseError``, as ``parse(_:)-(UnsafeRawBufferPointer)`` does.
  ///
  /// Inlinable so that a caller in another module gets it specialised for its collection:
  /// unspecialised, each parse reached the storage through the protocol's witness table and
  /// the run time's generic metadata, cold code that cost a watch event as much as a fifth
  /// of its parse (docs/BENCHMARK-METHOD.md, "Fan-out").
  @inlinable
  public func parse<Bytes: Collection<UInt8>>(_ bytes: Bytes) throws(JSONParseError) -> JSONValue {
    let result: Result<JSONValue, JSONParseError>? = bytes.withContiguousStorageIfAvailable { buffer in
      Result { () throws(JSONParseError) in try parse(UnsafeRawBufferPointer(buffer)) }
    }
    if let result { return try result.get() }
    let copied = Array(bytes).withUnsafeBytes { buffer in
      Result { () throws(JSONParseError) in try parse(buffer) }
    }
    return try copied.get()
  }
}

extension JSONValue {
  /// Parses one JSON document from UTF-8 bytes in memory; see ``JSONParser`` for exactly
  /// what is accepted.
  /// - Parameters:
  ///   - bytes: the whole document.
  ///   - options: nesting limit and duplicate-key policy.
  /// - Throws: ``JSONParseError`` with the line and column of the first problem.
  public init(parsing bytes: UnsafeRawBufferPointer, options: JSONParser.Options = .init()) throws(JSONParseError) {
    self = try JSONParser(options: options).parse(bytes)
  }

  /// Parses one JSON document from a collection of UTF-8 bytes (`[UInt8]`, `ArraySlice`,
  /// `Data`); see ``JSONParser`` for exactly what is accepted.
  /// - Parameters:
  ///   - bytes: the whole document.
  ///   - options: nesting limit and duplicate-key policy.
  /// - Throws: ``JSONParseError`` with the line and column of the first problem.
  public init<Bytes: Collection<UInt8>>(parsing bytes: Bytes, options: JSONParser.Options = .init()) throws(JSONParseError) {
    self = try JSONParser(options: options).parse(bytes)
  }

  /// Parses one JSON document from a string; see ``JSONParser`` for exactly what is accepted.
  /// - Parameters:
  ///   - string: the whole document.
  ///   - options: nesting limit and duplicate-key policy.
  /// - Throws: ``JSONParseError`` with the line and column of the first problem.
  public init(parsing string: String, options: JSONParser.Options = .init()) throws(JSONParseError) {
    var string = string
    let result = string.withUTF8 { buffer in
      Result { () throws(JSONParseError) in try JSONParser(options: options).parse(UnsafeRawBufferPointer(buffer)) }
    }
    self = try result.get()
  }
}
