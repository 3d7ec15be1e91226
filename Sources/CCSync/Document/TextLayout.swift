import CCSyncJSON

/// Where a version's top-level members lie in its text, kept with the version a process last
/// saw (see ``VersionTracking/SeenVersion``): the next version, when it differs only inside
/// top-level values, is parsed by those values alone, and the next write prints or edits only
/// the values that changed. `Sendable`.
enum TextLayout: Sendable, Equatable {
  /// The printer's own text (``JSONDocumentLayout``): a write copies the text of the values
  /// that stay and prints the others.
  case printed(JSONDocumentLayout)
  /// Text a person or another program laid out, which writes edit in place
  /// (``LosslessLayout``): a write passes over the values that stay without a scan.
  case edited(LosslessLayout)

  /// `bytes` parsed by way of `known`, the text with this layout that parses to `document`,
  /// and the new text's layout when known; `nil` when the shortcut does not apply (the caller
  /// parses the whole text).
  func parse(_ bytes: [UInt8], over known: [UInt8], parsedAs document: JSONValue, syntax: JSONSyntax)
    -> (document: JSONValue, layout: TextLayout?)?
  {
    switch self {
    case .printed(let layout):
      // Strict JSON: a comment in a changed value falls back to the whole parse.
      return layout.parse(bytes, over: known, parsedAs: document).map { ($0.document, $0.layout.map(TextLayout.printed)) }
    case .edited(let layout):
      return layout.parse(bytes, over: known, parsedAs: document, syntax: syntax).map { ($0.document, .edited($0.layout)) }
    }
  }
}
