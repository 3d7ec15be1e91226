// The Codable floor of the codec benchmark: how fast any Codable decoder or encoder could
// be for the benchmark's document type, and what that leaves of the 5x goal.
import CCSync
import CCSyncProcesses

enum CodableFloor {
  /// The replay of one document: its tape, checked to give back the document.
  struct Replay {
    let tape: DecodingTape
    /// Answers on the tape (values, flags, counts, kinds), all columns together.
    var valueCount: Int { tape.valueCount }
  }

  /// Records `tree` as decoded into a `CodecDocument` and checks that the recording, its
  /// replay (both array paths) and the discard encoder agree with `document`. (Not through
  /// ``replayDecode(_:)`` and ``discardEncode(_:)``, so that a profile of those counts only
  /// the calls it makes.)
  static func prepare(document: CodecDocument, tree: JSONValue) throws -> Replay {
    let (recorded, tape) = try TapeRecorder.record(CodecDocument.self, from: tree)
    guard recorded == document,
      try ReplayDecoder.decode(CodecDocument.self, from: tape, arrays: .direct) == document,
      try ReplayDecoder.decode(CodecDocument.self, from: tape, arrays: .standardLibrary) == document
    else {
      throw TapeRecordingError(description: "the replay does not give back the document")
    }
    let leaves = leafCount(tree)
    let discarded = try DiscardEncoder.encode(document)
    guard discarded.valueCount == leaves else {
      throw TapeRecordingError(
        description: "the discard encoder took \(discarded.valueCount) values, the tree has \(leaves)")
    }
    return Replay(tape: tape)
  }

  /// The floor under decoding: a replay of `tape` (a separate function, for callgrind).
  @inline(never)
  static func replayDecode(_ tape: DecodingTape) throws -> CodecDocument {
    try ReplayDecoder.decode(CodecDocument.self, from: tape)
  }

  /// The floor under encoding: `document` encoded into nothing (a separate function, for
  /// callgrind).
  @inline(never)
  static func discardEncode(_ document: CodecDocument) throws -> (checksum: UInt64, valueCount: Int) {
    try DiscardEncoder.encode(document)
  }

  /// Strings, numbers, Booleans and nulls in `value` (object keys not counted).
  static func leafCount(_ value: JSONValue) -> Int {
    switch value {
    case .array(let elements): return elements.reduce(0) { $0 + leafCount($1) }
    case .object(let object): return object.members.reduce(0) { $0 + leafCount($1.value) }
    default: return 1
    }
  }

  /// What one document's floor leaves of the goal, seconds per call.
  struct Figures: Encodable {
    var document: String
    var foundationDecode: Double
    var foundationEncode: Double
    /// Our text → `JSONValue` (pretty, what the decode reads) and `JSONValue` → text
    /// (compact, what the encode writes).
    var parse: Double
    var print: Double
    var replay: Double
    var discard: Double
    /// Our `JSONValue` → struct and struct → `JSONValue`, when measured.
    var treeDecode: Double?
    var treeEncode: Double?
  }

  /// One line per document and direction: Foundation's time, the floor, the ceiling it
  /// sets (Foundation / floor), our text step, the ceiling with it (Foundation / (floor +
  /// text)), and our tree step against the floor.
  static func report(_ figures: [Figures]) {
    print("")
    print("Codable floor: the least time any Codable decoder (replay) or encoder (discard) takes for")
    print("this type; ceiling = Foundation's time / it, alone and with our text step (goal: 5x)")
    print("(decode: text = parse pretty; encode: text = print compact; tree = our JSONValue step)")
    print(padded("step", 8, left: true) + padded("document", 9, left: true) + padded("Foundation µs", 14)
      + padded("floor µs", 10) + padded("ceiling", 9) + padded("text µs", 10)
      + padded("floor+text", 11) + padded("ceiling", 9) + padded("tree µs", 10) + padded("tree/floor", 11))
    func line(_ step: String, _ document: String, _ foundation: Double, _ floor: Double, _ text: Double, _ tree: Double?) {
      var line = padded(step, 8, left: true) + padded(document, 9, left: true)
        + fixed(foundation * 1e6, 1, width: 14) + fixed(floor * 1e6, 1, width: 10)
        + fixed(foundation / floor, 2, width: 8) + "x" + fixed(text * 1e6, 1, width: 10)
        + fixed((floor + text) * 1e6, 1, width: 11) + fixed(foundation / (floor + text), 2, width: 8) + "x"
      if let tree { line += fixed(tree * 1e6, 1, width: 10) + fixed(tree / floor, 2, width: 10) + "x" }
      print(line)
    }
    for row in figures {
      line("decode", row.document, row.foundationDecode, row.replay, row.parse, row.treeDecode)
      line("encode", row.document, row.foundationEncode, row.discard, row.print, row.treeEncode)
    }
  }
}
