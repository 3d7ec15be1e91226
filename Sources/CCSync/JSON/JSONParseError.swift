// Placeholder until the parser branch lands.
public struct JSONParseError: Error, Sendable, CustomStringConvertible {
  public var description: String { "" }
}
