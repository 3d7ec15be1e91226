// `ccsync-bench lossless`: the lossless document against today's whole parse and print.
//   speed [MB]            parse + one nested change + render of a hand-formatted JWCC
//                         document (4-space indent, comments) against JSONParser +
//                         JSONPrinter on the same value in the printer's layout; and the
//                         1 KB read-modify-write both ways
//   generate MB PATH [printed]  writes the hand-formatted document of about MB megabytes
//                         (`printed`: the same value in the printer's layout)
//   memory PATH MODE      reads PATH and parses it (MODE: parser, lossless, lossless-jwcc;
//                         parser-print, lossless-jwcc-render also change a value and write),
//                         for `/usr/bin/time -v` to report the peak resident memory
import CCSync
import CCSyncJSON
import CCSyncProcesses
import Glibc

enum LosslessBenchmark {
  static let usage = "USAGE: ccsync-bench lossless speed [MB] | generate MB PATH [printed] | memory PATH parser|lossless|lossless-jwcc|parser-print|lossless-jwcc-render"

  static func run(arguments: [String]) {
    switch arguments.first {
    case "speed":
      speed(megabytes: arguments.count > 1 ? Double(arguments[1]) ?? 1 : 1)
    case "generate" where arguments.count == 3 || arguments.count == 4 && arguments[3] == "printed":
      var text = handFormatted(records: records(forMegabytes: Double(arguments[1]) ?? 1))
      if arguments.count == 4 { text = try! LosslessJSONDocument(parsing: text, syntax: .jwcc).value!.formattedBytes() }
      guard let file = fopen(arguments[2], "w") else { BenchmarkProcess.fail("cannot write \(arguments[2])", code: 1) }
      _ = text.withUnsafeBufferPointer { fwrite($0.baseAddress, 1, $0.count, file) }
      fclose(file)
    case "memory" where arguments.count == 3:
      memory(path: arguments[1], mode: arguments[2])
    default:
      BenchmarkProcess.fail(usage, code: 64)
    }
  }

  /// About how many records make `megabytes` of hand-formatted text (one is about 330 bytes).
  static func records(forMegabytes megabytes: Double) -> Int {
    max(1, Int(megabytes * 1_000_000 / 330))
  }

  /// A hand-written-looking JWCC document: 4-space indent, comments above and after members,
  /// a mix of one-line and multi-line containers.
  static func handFormatted(records: Int) -> [UInt8] {
    var text = "// Generated for ccsync-bench lossless\n{\n    \"version\": 3, // schema\n    \"records\": [\n"
    for index in 0..<records {
      text += """
            // record \(index)
            {
                "id": \(index),
                "name": "user-\(index)",
                "email": "user\(index)@example.com",
                "active": \(index % 3 == 0 ? "false" : "true"), // flips
                "score": \(index % 97).5,
                "tags": ["alpha", "beta", "gamma"],
                /* where */
                "address": {
                    "city": "Paris",
                    "zip": "750\(index % 10)\(index % 7)"
                }
            }\(index + 1 < records ? "," : "")

        """
    }
    text += "    ]\n}\n"
    return Array(text.utf8)
  }

  static func speed(megabytes: Double) {
    let count = records(forMegabytes: megabytes)
    let hand = handFormatted(records: count)
    let value = try! LosslessJSONDocument(parsing: hand, syntax: .jwcc).value!
    let printed = value.formattedBytes()
    let path = JSONPath(tokens: ["records", String(count / 2), "address", "city"])
    print("document: \(hand.count) bytes hand-formatted JWCC, \(printed.count) bytes in the printer's layout")

    let (today, lossless, ratio) = pairedMedianSeconds(rounds: 15) {
      var parsed = try! JSONValue(parsing: printed)
      try! parsed.setValue("Lyon", at: path)
      blackHole(parsed.formattedBytes())
    } _: {
      let document = try! LosslessJSONDocument(parsing: hand, syntax: .jwcc)
      var parsed = document.value!
      try! parsed.setValue("Lyon", at: path)
      blackHole(document.bytes(updatedTo: parsed))
    }
    print("parse + change + print (printer layout):   \(fixed(today * 1000, 2)) ms")
    print("lossless parse + change + render (JWCC):   \(fixed(lossless * 1000, 2)) ms   ratio \(fixed(ratio, 3))")

    let (_, strictLossless, strictRatio) = pairedMedianSeconds(rounds: 15) {
      var parsed = try! JSONValue(parsing: printed)
      try! parsed.setValue("Lyon", at: path)
      blackHole(parsed.formattedBytes())
    } _: {
      let document = try! LosslessJSONDocument(parsing: printed, syntax: .strict)
      var parsed = document.value!
      try! parsed.setValue("Lyon", at: path)
      blackHole(document.bytes(updatedTo: parsed))
    }
    print("lossless on the printer's layout (strict): \(fixed(strictLossless * 1000, 2)) ms   ratio \(fixed(strictRatio, 3))")

    // The 1 KB read-modify-write: whole parse and print, the layout fast path, the lossless
    // document (whole parse), the lossless document over an already parsed value.
    let small = try! LosslessJSONDocument(parsing: handFormatted(records: 2), syntax: .jwcc).value!.formattedBytes()
    let smallValue = try! JSONValue(parsing: small)
    let (knownText, layout) = JSONDocumentLayout.print(smallValue)
    let smallPath = JSONPath(tokens: ["version"])
    let changedText = try! { () throws -> [UInt8] in
      var changed = smallValue
      try changed.setValue(4, at: smallPath)
      return changed.formattedBytes()
    }()
    print("1 KB document: \(small.count) bytes")
    let (whole, losslessSmall, smallRatio) = pairedMedianSeconds(rounds: 15) {
      var parsed = try! JSONValue(parsing: changedText)
      try! parsed.setValue(5, at: smallPath)
      blackHole(parsed.formattedBytes())
    } _: {
      let document = try! LosslessJSONDocument(parsing: changedText)
      var parsed = document.value!
      try! parsed.setValue(5, at: smallPath)
      blackHole(document.bytes(updatedTo: parsed))
    }
    let (fast, losslessKnown, knownRatio) = pairedMedianSeconds(rounds: 15) {
      var parsed = layout!.parse(changedText, over: knownText, parsedAs: smallValue)!.document
      try! parsed.setValue(5, at: smallPath)
      blackHole(layout!.print(parsed, over: knownText, printedFrom: smallValue))
    } _: {
      let parsed = layout!.parse(changedText, over: knownText, parsedAs: smallValue)!.document
      let document = LosslessJSONDocument(bytes: changedText, syntax: .strict, value: parsed)
      var edited = parsed
      try! edited.setValue(5, at: smallPath)
      blackHole(document.bytes(updatedTo: edited))
    }
    print("1 KB whole parse + change + print:         \(fixed(whole * 1e6, 2)) us")
    print("1 KB lossless parse + change + render:     \(fixed(losslessSmall * 1e6, 2)) us   ratio \(fixed(smallRatio, 3))")
    print("1 KB layout fast path (parse + print):     \(fixed(fast * 1e6, 2)) us")
    print("1 KB layout parse + lossless render:       \(fixed(losslessKnown * 1e6, 2)) us   ratio \(fixed(knownRatio, 3))")
  }

  /// Reads `path` whole and parses it once; the caller measures the peak memory.
  static func memory(path: String, mode: String) {
    guard let file = fopen(path, "r") else { BenchmarkProcess.fail("cannot read \(path)", code: 1) }
    fseek(file, 0, SEEK_END)
    let size = ftell(file)
    fseek(file, 0, SEEK_SET)
    let bytes = [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
      initialized = fread(buffer.baseAddress, 1, size, file)
    }
    fclose(file)
    switch mode {
    case "parser":
      let value = try! JSONValue(parsing: bytes)
      blackHole(value)
    case "lossless":
      let document = try! LosslessJSONDocument(parsing: bytes, syntax: .strict)
      blackHole(document)
    case "lossless-jwcc":
      let document = try! LosslessJSONDocument(parsing: bytes, syntax: .jwcc)
      blackHole(document)
    case "parser-print":
      var value = try! JSONValue(parsing: bytes)
      try! value.setValue("Lyon", at: JSONPath(tokens: ["records", "1", "address", "city"]))
      blackHole(value.formattedBytes())
    case "lossless-jwcc-render":
      let document = try! LosslessJSONDocument(parsing: bytes, syntax: .jwcc)
      var value = document.value!
      try! value.setValue("Lyon", at: JSONPath(tokens: ["records", "1", "address", "city"]))
      blackHole(document.bytes(updatedTo: value))
    default:
      BenchmarkProcess.fail(usage, code: 64)
    }
    print("parsed \(bytes.count) bytes")
  }
}
