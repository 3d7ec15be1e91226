import CCSyncSystem

/// Why a JSON value is not a schema ``JSONSchema`` can compile: a keyword of the wrong type,
/// a pattern that is not a regular expression, a `$ref` that names nothing, a `$ref` cycle
/// that would never end. `Sendable`.
///
/// The description names the place in the schema and the fault:
/// `#/properties/port/type: "int" is not a JSON type name`.
public struct JSONSchemaError: Error, Sendable, Hashable, CustomStringConvertible {
  /// Where in the schema the fault is: a URI whose fragment is a JSON Pointer, `#` plus the
  /// pointer for the document being compiled (`#/properties/port/type`).
  public let schemaLocation: String
  /// What is wrong, in a sentence without a final period.
  public let message: String

  /// Creates an error for `message` at `schemaLocation`.
  public init(schemaLocation: String, message: String) {
    self.schemaLocation = schemaLocation
    self.message = message
  }

  public var description: String { "\(schemaLocation): \(message)" }
}
