import CCSyncSystem

/// One way an instance breaks a schema: where in the instance, which keyword, where that
/// keyword is in the schema, and what it expected. `Sendable`.
///
/// Its description reads `/server/port: 8080.5 is not an integer (type)`; a failure of the
/// whole document reads `(root): ...`.
public struct JSONSchemaFailure: Sendable, Hashable, CustomStringConvertible {
  /// The failing value's place in the instance, a JSON Pointer: `/server/port`, `""` for the
  /// whole document.
  public let instanceLocation: String
  /// The keyword that failed: `type`, `required`, `anyOf`, ...
  public let keyword: String
  /// The keyword's place in the schema: a URI whose fragment is a JSON Pointer
  /// (`#/properties/server/properties/port/type`); `#` alone for the schema document's root.
  public let schemaLocation: String
  /// What was expected, without the location: `8080.5 is not an integer`.
  public let message: String

  /// Creates a failure.
  public init(instanceLocation: String, keyword: String, schemaLocation: String, message: String) {
    self.instanceLocation = instanceLocation
    self.keyword = keyword
    self.schemaLocation = schemaLocation
    self.message = message
  }

  public var description: String {
    "\(instanceLocation.isEmpty ? "(root)" : instanceLocation): \(message) (\(keyword))"
  }
}
