import CCSyncSystem

/// A JSON Schema (draft 2020-12) compiled once, to validate any number of instances.
///
/// ```swift
/// let schema = try JSONSchema(JSONValue(parsing: schemaText))
/// for failure in schema.validate(settings) { print(failure) }
/// // /server/port: 8080.5 is not an integer (type)
/// ```
///
/// It knows the whole 2020-12 vocabulary: core (`$id`, `$anchor`, `$ref`, `$dynamicRef`,
/// `$dynamicAnchor`, `$defs`, `$schema`, `$vocabulary`), applicators, `unevaluatedItems` and
/// `unevaluatedProperties`, the validation keywords, and `format` (an annotation unless
/// ``Options/assertFormats`` is set). Numbers compare by exact decimal value, so `1.0`
/// equals `1` and `0.0075` is a multiple of `0.0001`. Unknown keywords are ignored.
///
/// `Sendable`: the compiled schema is immutable, and any number of threads can validate
/// with it at once.
public struct JSONSchema: Sendable {
  /// Settings of compilation and validation.
  public struct Options: Sendable, Hashable {
    /// Whether `format` is an assertion (an instance in the wrong format fails) for the
    /// formats checked: `date-time`, `date`, `time`, `duration`, `email`, `hostname`,
    /// `ipv4`, `ipv6`, `uri`, `uri-reference`, `uuid`, `json-pointer` and `regex`. Off by
    /// default, as the specification says; other formats are never checked.
    public var assertFormats: Bool

    /// Creates options; by default `format` is only an annotation.
    public init(assertFormats: Bool = false) {
      self.assertFormats = assertFormats
    }
  }

  /// The base URI a schema without `$id` gets when the caller names none.
  public static let defaultBaseURI = "https://ccsync.invalid/schema.json"

  /// The URI the schema document was compiled under (relative `$id`s and `$ref`s resolve
  /// against it).
  public let baseURI: String
  /// The options it was compiled with.
  public let options: Options
  private let program: SchemaProgram

  /// Compiles a schema document.
  ///
  /// - Parameters:
  ///   - schema: the schema, an object or a boolean.
  ///   - baseURI: the document's own URI, against which its relative `$id` and `$ref`
  ///     values resolve; ``defaultBaseURI`` when it has none.
  ///   - options: see ``Options``.
  ///   - resolver: returns the schema document for an absolute URI (without fragment) that a
  ///     `$ref` names and that is not in `schema`, or `nil` when it knows none. Called during
  ///     compilation only, at most once per URI; it may throw, which fails the compilation.
  /// - Throws: ``JSONSchemaError`` naming the schema location when `schema` is not a valid
  ///   schema: a keyword of the wrong type, a pattern that is no regular expression, a `$ref`
  ///   the resolver cannot find, or a `$ref` cycle that would never end.
  public init(
    _ schema: JSONValue, baseURI: String = JSONSchema.defaultBaseURI, options: Options = Options(),
    resolver: ((String) throws -> JSONValue?)? = nil
  ) throws(JSONSchemaError) {
    let base = SchemaURI.splitFragment(baseURI).resource
    let compiler = SchemaCompiler(rootDocument: base, resolver: resolver, assertFormats: options.assertFormats)
    self.program = try compiler.compile(schema)
    self.baseURI = base
    self.options = options
  }

  /// Every way `instance` breaks the schema, in document order; empty when it is valid.
  ///
  /// A failing `anyOf`, `oneOf`, `not`, `contains` or `propertyNames` is one failure of that
  /// keyword, not one for each of its branches' complaints.
  public func validate(_ instance: JSONValue) -> [JSONSchemaFailure] {
    var validator = SchemaValidator(program: program, reporting: true)
    var ignored = SchemaEvaluated()
    _ = validator.evaluate(program.root, instance, &ignored, collect: false)
    return validator.failures
  }

  /// Whether `instance` is valid; stops at the first failure and builds no messages.
  public func isValid(_ instance: JSONValue) -> Bool {
    var validator = SchemaValidator(program: program, reporting: false)
    var ignored = SchemaEvaluated()
    return validator.evaluate(program.root, instance, &ignored, collect: false)
  }
}
