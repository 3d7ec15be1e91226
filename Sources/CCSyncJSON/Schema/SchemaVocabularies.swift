import CCSyncSystem

/// Which vocabularies a document's `$schema` turns on: all of them for the 2020-12
/// metaschema (or no `$schema`); for another metaschema, those its `$vocabulary` lists. A
/// vocabulary turned off leaves its keywords as annotations.
struct SchemaVocabularies {
  var validation = true
  var applicator = true
  var unevaluated = true
  var formatAssertion = false

  static let all = SchemaVocabularies()
}

extension SchemaCompiler {
  /// The vocabularies a document's `$schema` names: all of them for the 2020-12 metaschema or
  /// none named; otherwise the metaschema's `$vocabulary`, when the resolver has it.
  func vocabularies(of document: JSONValue, location: SchemaLocation) throws(JSONSchemaError) -> SchemaVocabularies {
    guard case .object(let object) = document, let schema = object["$schema"] else { return .all }
    guard case .string(let uri) = schema else { throw error(location.appending("$schema"), "$schema must be a string, not \(schema.kindName)") }
    let metaschema = SchemaURI.splitFragment(uri).resource
    if metaschema == "https://json-schema.org/draft/2020-12/schema" { return .all }
    let loaded: JSONValue?
    do { loaded = try fetch(metaschema) } catch { loaded = nil }
    guard case .object(let meta)? = loaded, case .object(let vocabulary)? = meta["$vocabulary"] else { return .all }
    var result = SchemaVocabularies(validation: false, applicator: false, unevaluated: false, formatAssertion: false)
    let prefix = "https://json-schema.org/draft/2020-12/vocab/"
    for entry in vocabulary {
      switch entry.key {
      case prefix + "validation": result.validation = true
      case prefix + "applicator": result.applicator = true
      case prefix + "unevaluated": result.unevaluated = true
      case prefix + "format-assertion": result.formatAssertion = true
      case prefix + "core", prefix + "format-annotation", prefix + "content", prefix + "meta-data": break
      default:
        if entry.value == .bool(true) {
          throw error(location.appending("$schema"), "the metaschema requires the unknown vocabulary \(entry.key)")
        }
      }
    }
    return result
  }
}
