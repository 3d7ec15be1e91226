import CCSync
import CCSyncProcesses

/// `ccsync validate [--schema S] [--assert-formats] [--json] FILE|URL|- ...`: checks documents
/// against their schema without writing anything.
enum ValidateCommand: Command {
  static let json = OptionSpec(nil, "json", help: "Print one JSON object per document: {\"document\", \"valid\", \"errors\"}.")

  static let spec = CommandSpec(
    name: "validate", overview: "Check documents against a JSON Schema: --schema, or the one their '$schema' names.",
    operands: [OperandSpec("file", kind: .document, help: "A JSON file, an etcd:// key, or - for standard input; more may follow.")],
    options: [GateOptions.schema, GateOptions.assertFormats, json, Help.jsonc],
    discussion: "Exits 0 when every document passes; 65 with one line per failure ('FILE': /pointer: what is wrong (keyword)) when one does not, or is not valid JSON; 64 when a document has no schema to check against (no --schema, and no '$schema' naming a file or key: an http(s) URL is an editor's and is not fetched); 66 when a document or its schema cannot be found; 65 when the schema is not a valid JSON Schema (draft 2020-12). A relative '$schema' is resolved beside the document (for standard input, in the current directory).",
    repeatsOperands: true)

  static func run(_ arguments: ParsedArguments) throws -> Int32 {
    var status = ExitCode.success
    for operand in arguments.operands {
      let (name, document, value) = try read(operand, arguments)
      guard document.gateApplies(to: value) else {
        throw arguments.usageError("'\(name)' has no schema to check against: give --schema, or a '$schema' member naming a schema file beside it")
      }
      let reasons = try rejections(of: value, by: document)
      if arguments.has(json) {
        var object = JSONObject()
        object["document"] = .string(name)
        object["valid"] = .bool(reasons.isEmpty)
        object["errors"] = .array(reasons.map { .string($0) })
        StandardStreams.writeLine(JSONValue.object(object).formatted(.compact))
      } else {
        for reason in reasons { StandardStreams.writeLine("ccsync: '\(name)': \(reason)", toStandardError: true) }
      }
      if !reasons.isEmpty { status = ExitCode.dataError }
    }
    return status
  }

  /// Why `document`'s gate refuses `value`; empty when it passes.
  /// - Throws: what is not a refusal: a schema that cannot be read or is not valid.
  private static func rejections(of value: JSONValue, by document: SharedDocument) throws -> [String] {
    let outcome = Result { () throws(StorageError) in try document.judge(value) }
    guard case .failure(let error) = outcome else { return [] }
    guard case .rejected(_, let reasons) = error else { throw error }
    return reasons
  }

  /// The document named by `operand`: its name in messages, the document it is judged as,
  /// and its value.
  private static func read(_ operand: String, _ arguments: ParsedArguments) throws -> (String, SharedDocument, JSONValue) {
    if operand == "-" {
      let name = "standard input"
      let input = try StandardStreams.readStandardInput()
      let value: JSONValue
      do {
        value = try JSONValue(parsing: input)
      } catch {
        throw CommandFailure(ExitCode.dataError, "standard input is not valid JSON: \(error)")
      }
      let gate = try GateOptions.gate(arguments, documentName: name)
      return (name, SharedDocument(path: "./-", gate: gate), value)
    }
    let address = try DocumentAddress(operand, in: spec)
    let document = address.document(gate: try GateOptions.gate(arguments, documentName: address.name))
    do {
      guard let value = try document.read() else { throw address.missing }
      return (address.name, document, value)
    } catch let error as StorageError {
      throw CommandFailure(error, file: operand)
    }
  }
}
