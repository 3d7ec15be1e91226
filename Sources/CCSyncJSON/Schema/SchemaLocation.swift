import CCSyncSystem

/// A place in a schema document: the document's URI and a JSON Pointer's tokens.
struct SchemaLocation: Hashable {
  var document: String
  var tokens: [String]

  func appending(_ token: String) -> SchemaLocation {
    SchemaLocation(document: document, tokens: tokens + [token])
  }

  var key: String { document + "#" + SchemaURI.pointer(tokens) }
}
