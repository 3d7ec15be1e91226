// `ccsync-bench codec`: JSON parse, print, decode and encode speed of CCSync against
// Foundation (and Python's json) on the same documents, in the same run.
//
// The benchmark, and only it, imports Foundation: it is the reference being measured against.
import CCSync
import CCSyncProcesses
import Foundation

enum CodecBenchmark {
  struct Settings {
    var rounds = 9
    /// Operation groups to run: parse, print, decode, encode, tree, floor.
    var only: Set<String> = ["parse", "print", "decode", "encode", "tree", "floor"]
    var documents: [(name: String, services: Int)] = [("10 KB", 7), ("1 MB", 790)]
    var python = true
    var foundation = true
    /// An operation to run exactly ``profileIterations`` times, untimed, for callgrind.
    var profile: String?
    /// Where to write the rows and floor figures as JSON (for bench/run), besides the report.
    var jsonPath: String?
  }

  static let profileIterations = 10

  static let usage = """
    USAGE: ccsync-bench codec [--rounds N] [--only parse|print|decode|encode|tree|floor[,...]]
                              [--size small|large] [--no-python] [--no-foundation] [--json PATH]
           ccsync-bench codec --profile parse|parse-compact|print|print-compact|decode|encode|encode-tree|tree-decode|tree-encode
                              |replay-decode|discard-encode
                              [--size small|large]   (runs it \(profileIterations) times, for valgrind)
    """

  /// One measured operation: our time and the references' times, seconds per call.
  struct Row: Encodable {
    var operation: String
    var document: String
    var bytes: Int
    var ours: Double
    var foundation: Double?
    /// Foundation's time over ours, taken round by round (each round times both back to
    /// back), then the median: steadier on a loaded machine than a ratio of two medians.
    var ratio: Double?
    var python: Double?
    /// Python's time over ours, taken round by round as ``ratio`` is.
    var pythonRatio: Double?

    func megabytesPerSecond(_ seconds: Double) -> Double { Double(bytes) / seconds / 1_000_000 }
  }

  static func run(arguments: [String]) {
    var settings = Settings()
    var remaining = arguments[...]
    while let argument = remaining.popFirst() {
      switch argument {
      case "--rounds":
        guard let value = remaining.popFirst().flatMap({ Int($0) }), value > 0 else { fail("--rounds needs a positive number") }
        settings.rounds = value
      case "--only":
        guard let value = remaining.popFirst() else { fail("--only needs a list of operations") }
        settings.only = Set(value.split(separator: ",").map(String.init))
      case "--size":
        switch remaining.popFirst() {
        case "small": settings.documents.removeLast()
        case "large": settings.documents.removeFirst()
        default: fail("--size is small or large")
        }
      case "--no-python":
        settings.python = false
      case "--no-foundation":
        settings.foundation = false
      case "--json":
        guard let value = remaining.popFirst() else { fail("--json needs a path") }
        settings.jsonPath = value
      case "--profile":
        guard let value = remaining.popFirst() else { fail("--profile needs an operation") }
        settings.profile = value
      case "-h", "--help":
        print(usage)
        return
      default:
        fail("Unknown option '\(argument)'")
      }
    }
    if let operation = settings.profile {
      do {
        for document in settings.documents { try profile(operation, services: document.services) }
      } catch {
        fail("codec benchmark failed: \(error)")
      }
      return
    }
    print("codec benchmark: median of \(settings.rounds) rounds; MB/s = document bytes / time (1 MB = 10^6 bytes)")
    print("ratio = the reference's time / ours (above 1: CCSync is faster); Foundation's taken round by round")
    do {
      var rows: [Row] = []
      var floors: [CodableFloor.Figures] = []
      for document in settings.documents {
        let measured = try measure(document: document.name, services: document.services, settings: settings)
        rows += measured.rows
        floors += measured.floor.map { [$0] } ?? []
      }
      report(rows, settings: settings)
      if !floors.isEmpty { CodableFloor.report(floors) }
      if let path = settings.jsonPath { try writeJSON(rows: rows, floors: floors, to: path) }
    } catch {
      fail("codec benchmark failed: \(error)")
    }
  }

  static func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("Error: \(message)\n\(usage)\n".utf8))
    exit(64)
  }

  /// Measures every selected operation on one generated document, after checking that
  /// CCSync and Foundation agree on it. The Codable floor's figures come back when the
  /// floor was selected and Foundation measured.
  static func measure(
    document name: String, services: Int, settings: Settings
  ) throws -> (rows: [Row], floor: CodableFloor.Figures?) {
    let rounds = settings.rounds
    let document = CodecDocument.generate(serviceCount: services)
    let encoder = JSONValueEncoder()
    let decoder = JSONValueDecoder()
    let foundationEncoder = JSONEncoder()
    let foundationDecoder = JSONDecoder()
    let tree = try encoder.encode(document)
    let pretty = tree.formattedBytes(.pretty)
    let compact = tree.formattedBytes(.compact)
    let prettyData = Data(pretty)
    let compactData = Data(compact)

    // The work being timed must be right.
    let reparsed = try JSONValue(parsing: pretty)
    guard reparsed == tree, reparsed.formattedBytes(.pretty) == pretty,
      try decoder.decode(CodecDocument.self, from: reparsed) == document,
      try foundationDecoder.decode(CodecDocument.self, from: prettyData) == document,
      try JSONValue(parsing: foundationEncoder.encode(document)) == tree,
      try encoder.encodeBytes(document) == compact
    else {
      fail("round trip mismatch on the \(name) document")
    }
    let foundationObject = try JSONSerialization.jsonObject(with: prettyData)
    print("  \(name) document: \(services) services, \(pretty.count) bytes pretty, \(compact.count) bytes compact")

    /// Our operation and Foundation's, timed round by round (Foundation's left out when it
    /// is switched off, to profile CCSync alone).
    func compared(
      _ operation: String, bytes: Int, ours: () throws -> Void, foundation: () throws -> Void
    ) throws -> Row {
      guard settings.foundation else {
        return Row(operation: operation, document: name, bytes: bytes, ours: try medianSeconds(rounds: rounds, ours))
      }
      let timing = try pairedMedianSeconds(rounds: rounds, ours, foundation)
      return Row(
        operation: operation, document: name, bytes: bytes, ours: timing.first, foundation: timing.second,
        ratio: timing.secondOverFirst)
    }
    /// Foundation's time alone, unless it is switched off.
    func reference(_ body: () throws -> Void) rethrows -> Double? {
      settings.foundation ? try medianSeconds(rounds: rounds, body) : nil
    }
    let selected = settings.only
    var rows: [Row] = []
    if selected.contains("parse") {
      rows.append(try compared(
        "parse (pretty text)", bytes: pretty.count,
        ours: { blackHole(try JSONValue(parsing: pretty)) },
        foundation: { blackHole(try JSONSerialization.jsonObject(with: prettyData)) }))
      rows.append(try compared(
        "parse (compact text)", bytes: compact.count,
        ours: { blackHole(try JSONValue(parsing: compact)) },
        foundation: { blackHole(try JSONSerialization.jsonObject(with: compactData)) }))
    }
    if selected.contains("print") {
      rows.append(try compared(
        "print pretty", bytes: pretty.count,
        ours: { blackHole(tree.formattedBytes(.pretty)) },
        foundation: { blackHole(try JSONSerialization.data(withJSONObject: foundationObject, options: [.prettyPrinted])) }))
      rows.append(try compared(
        "print compact", bytes: compact.count,
        ours: { blackHole(tree.formattedBytes(.compact)) },
        foundation: { blackHole(try JSONSerialization.data(withJSONObject: foundationObject)) }))
    }
    if selected.contains("decode") {
      rows.append(try compared(
        "decode text -> struct", bytes: pretty.count,
        ours: { blackHole(try decoder.decode(CodecDocument.self, from: JSONValue(parsing: pretty))) },
        foundation: { blackHole(try foundationDecoder.decode(CodecDocument.self, from: prettyData)) }))
    }
    if selected.contains("encode") {
      rows.append(try compared(
        "encode struct -> text", bytes: compact.count,
        ours: { blackHole(try encoder.encodeBytes(document)) },
        foundation: { blackHole(try foundationEncoder.encode(document)) }))
      rows.append(Row(
        operation: "  same through JSONValue", document: name, bytes: compact.count,
        ours: try medianSeconds(rounds: rounds) { blackHole(try encoder.encode(document).formattedBytes(.compact)) }))
    }
    if selected.contains("tree") {
      // The Codable machinery alone, without text: the floor under decode and encode.
      rows.append(Row(
        operation: "  of which JSONValue -> struct", document: name, bytes: pretty.count,
        ours: try medianSeconds(rounds: rounds) { blackHole(try decoder.decode(CodecDocument.self, from: tree)) }))
      rows.append(Row(
        operation: "  of which struct -> JSONValue", document: name, bytes: compact.count,
        ours: try medianSeconds(rounds: rounds) { blackHole(try encoder.encode(document)) }))
    }
    var floor: CodableFloor.Figures?
    if selected.contains("floor") {
      // The least any Codable decoder and encoder can take (see ReplayDecoder, DiscardEncoder),
      // against Foundation's decode and encode, and our text steps, measured above if they were.
      let replay = try CodableFloor.prepare(document: document, tree: tree)
      print("  \(name) document: the replay tape holds \(replay.valueCount) answers")
      func measured(_ operation: String) -> Row? { rows.first { $0.operation == operation } }
      let foundationDecode = try measured("decode text -> struct")?.foundation
        ?? reference { blackHole(try foundationDecoder.decode(CodecDocument.self, from: prettyData)) }
      let foundationEncode = try measured("encode struct -> text")?.foundation
        ?? reference { blackHole(try foundationEncoder.encode(document)) }
      let replaySeconds = try medianSeconds(rounds: rounds) { blackHole(try CodableFloor.replayDecode(replay.tape)) }
      let discardSeconds = try medianSeconds(rounds: rounds) { blackHole(try CodableFloor.discardEncode(document)) }
      rows.append(Row(
        operation: "floor: any decoder (replay)", document: name, bytes: pretty.count,
        ours: replaySeconds, foundation: foundationDecode))
      rows.append(Row(
        operation: "floor: any encoder (discard)", document: name, bytes: compact.count,
        ours: discardSeconds, foundation: foundationEncode))
      if let foundationDecode, let foundationEncode {
        let parse = try measured("parse (pretty text)")?.ours
          ?? medianSeconds(rounds: rounds) { blackHole(try JSONValue(parsing: pretty)) }
        let print = measured("print compact")?.ours
          ?? medianSeconds(rounds: rounds) { blackHole(tree.formattedBytes(.compact)) }
        floor = CodableFloor.Figures(
          document: name, foundationDecode: foundationDecode, foundationEncode: foundationEncode,
          parse: parse, print: print, replay: replaySeconds, discard: discardSeconds,
          treeDecode: measured("  of which JSONValue -> struct")?.ours,
          treeEncode: measured("  of which struct -> JSONValue")?.ours)
      }
    }
    if settings.python, selected.contains("parse") || selected.contains("print") {
      // Python's json round by round against ours: each round, one Python child times one
      // batch of each operation, and one batch of ours follows at once, so both sides of a
      // round's ratio see the same load.
      let ours: [(operation: String, body: () throws -> Void, python: KeyPath<PythonTimes, Double>)] = [
        ("parse (pretty text)", { blackHole(try JSONValue(parsing: pretty)) }, \.parsePretty),
        ("parse (compact text)", { blackHole(try JSONValue(parsing: compact)) }, \.parseCompact),
        ("print pretty", { blackHole(tree.formattedBytes(.pretty)) }, \.printPretty),
        ("print compact", { blackHole(tree.formattedBytes(.compact)) }, \.printCompact),
      ]
      var pairs: [String: [(ours: Double, python: Double)]] = [:]
      for _ in 0..<rounds {
        guard let python = PythonBaseline.measure(pretty: pretty, compact: compact, rounds: 1) else { break }
        for entry in ours {
          pairs[entry.operation, default: []].append((try medianSeconds(rounds: 1, entry.body), python[keyPath: entry.python]))
        }
      }
      for index in rows.indices {
        guard let measured = pairs[rows[index].operation], !measured.isEmpty else { continue }
        rows[index].python = median(measured.map(\.python))
        rows[index].pythonRatio = median(measured.map { $0.python / $0.ours })
      }
    }
    return (rows, floor)
  }

  /// Runs one operation a fixed number of times, so instruction counts compare across builds.
  static func profile(_ operation: String, services: Int) throws {
    let document = CodecDocument.generate(serviceCount: services)
    let tree = try JSONValueEncoder().encode(document)
    let pretty = tree.formattedBytes(.pretty)
    let compact = tree.formattedBytes(.compact)
    let body: () throws -> Void
    // The floors need their recording (and its check) first; only the replay is profiled.
    let replay = operation == "replay-decode" ? try CodableFloor.prepare(document: document, tree: tree) : nil
    switch operation {
    case "parse": body = { blackHole(try JSONValue(parsing: pretty)) }
    case "parse-compact": body = { blackHole(try JSONValue(parsing: compact)) }
    case "print": body = { blackHole(tree.formattedBytes(.pretty)) }
    case "print-compact": body = { blackHole(tree.formattedBytes(.compact)) }
    case "decode": body = { blackHole(try JSONValueDecoder().decode(CodecDocument.self, from: JSONValue(parsing: pretty))) }
    case "encode": body = { blackHole(try JSONValueEncoder().encodeBytes(document)) }
    case "encode-tree": body = { blackHole(try JSONValueEncoder().encode(document).formattedBytes(.compact)) }
    case "tree-decode": body = { blackHole(try JSONValueDecoder().decode(CodecDocument.self, from: tree)) }
    case "tree-encode": body = { blackHole(try JSONValueEncoder().encode(document)) }
    case "replay-decode": body = { blackHole(try CodableFloor.replayDecode(replay!.tape)) }
    case "discard-encode": body = { blackHole(try CodableFloor.discardEncode(document)) }
    default: fail("Unknown operation '\(operation)'")
    }
    for _ in 0..<profileIterations { try body() }
  }

  static func report(_ rows: [Row], settings: Settings) {
    print("")
    print(padded("operation", 31, left: true) + padded("document", 9, left: true) + padded("µs", 11)
      + padded("CCSync MB/s", 13) + padded("Foundation", 12) + padded("ratio", 8)
      + padded("Python", 10) + padded("ratio", 8))
    for row in rows {
      var line = padded(row.operation, 31, left: true) + padded(row.document, 9, left: true)
      line += fixed(row.ours * 1e6, 1, width: 11) + fixed(row.megabytesPerSecond(row.ours), 1, width: 13)
      if let foundation = row.foundation {
        line += fixed(row.megabytesPerSecond(foundation), 1, width: 12) + fixed(row.ratio ?? foundation / row.ours, 2, width: 7) + "x"
      } else {
        line += padded("", 20)
      }
      if let python = row.python {
        line += fixed(row.megabytesPerSecond(python), 1, width: 10) + fixed(row.pythonRatio ?? python / row.ours, 2, width: 7) + "x"
      }
      print(line)
    }
    print("")
    print("goals:")
    for row in rows {
      let goal: String
      if row.operation.hasPrefix("parse") || row.operation.hasPrefix("print") {
        let speed = row.megabytesPerSecond(row.ours)
        goal = "\(fixed(speed, 0)) MB/s, goal 200 MB/s: " + (speed >= 200 ? "met" : "MISSED")
      } else if row.operation.hasPrefix("floor") {
        continue  // not our coder: the floor's ceilings are reported below
      } else if let ratio = row.ratio {
        goal = "\(fixed(ratio, 2))x Foundation, goal 5x: " + (ratio >= 5 ? "met" : "MISSED")
      } else {
        continue
      }
      print("  " + padded(row.operation, 31, left: true) + padded(row.document, 9, left: true) + goal)
    }
  }

  /// The rows and floor figures as JSON, seconds per call, for bench/run's report.
  static func writeJSON(rows: [Row], floors: [CodableFloor.Figures], to path: String) throws {
    struct Report: Encodable {
      var rows: [Row]
      var floors: [CodableFloor.Figures]
    }
    let bytes = try JSONValueEncoder().encodeBytes(Report(rows: rows, floors: floors), style: .pretty)
    guard FileManager.default.createFile(atPath: path, contents: Data(bytes)) else {
      fail("cannot write \(path)")
    }
  }
}
