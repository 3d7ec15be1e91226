import CCSyncSystem

/// How failure messages show values: compact JSON, cut to a readable length.
enum SchemaMessages {
  static let maximumLength = 60

  /// `value` as compact JSON, its middle replaced by `…` when longer than 60 characters.
  static func show(_ value: JSONValue) -> String {
    shorten(value.formatted(.compact))
  }

  static func show(_ string: String) -> String {
    show(JSONValue.string(string))
  }

  static func shorten(_ text: String) -> String {
    guard text.count > maximumLength else { return text }
    return String(text.prefix(maximumLength - 10)) + "…" + String(text.suffix(9))
  }

  /// `n thing` or `n things`.
  static func count(_ number: Int, _ noun: String) -> String {
    "\(number) \(noun)\(number == 1 ? "" : "s")"
  }
}
