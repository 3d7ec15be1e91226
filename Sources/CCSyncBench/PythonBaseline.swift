// Python's json module on the same documents, as a second reference point. Optional: when
// python3 is missing or fails, the column stays empty.
import Foundation

/// Median seconds per operation that Python's `json` takes on one document.
struct PythonTimes {
  var parsePretty: Double
  var parseCompact: Double
  var printPretty: Double
  var printCompact: Double
}

enum PythonBaseline {
  /// Times `json.loads` on both texts and `json.dumps` (compact, and `indent=2`) of the
  /// parsed value, with the same rounds-and-median method as the Swift side.
  private static let script = """
    import json, sys, time, statistics
    pretty = open(sys.argv[1], 'rb').read()
    compact = open(sys.argv[2], 'rb').read()
    rounds = int(sys.argv[3])
    value = json.loads(pretty)
    def median(body):
        body()
        start = time.perf_counter(); body(); once = max(time.perf_counter() - start, 1e-7)
        iterations = max(1, int(0.05 / once))
        samples = []
        for _ in range(rounds):
            start = time.perf_counter()
            for _ in range(iterations): body()
            samples.append((time.perf_counter() - start) / iterations)
        return statistics.median(samples)
    print(median(lambda: json.loads(pretty)))
    print(median(lambda: json.loads(compact)))
    print(median(lambda: json.dumps(value, indent=2, ensure_ascii=False).encode()))
    print(median(lambda: json.dumps(value, separators=(',', ':'), ensure_ascii=False).encode()))
    """

  /// Runs the script on the two texts, or returns `nil` when Python is unavailable.
  static func measure(pretty: [UInt8], compact: [UInt8], rounds: Int) -> PythonTimes? {
    let directory = FileManager.default.temporaryDirectory
      .appendingPathComponent("ccsync-bench-\(ProcessInfo.processInfo.processIdentifier)")
    defer { try? FileManager.default.removeItem(at: directory) }
    do {
      try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
      let prettyFile = directory.appendingPathComponent("pretty.json")
      let compactFile = directory.appendingPathComponent("compact.json")
      try Data(pretty).write(to: prettyFile)
      try Data(compact).write(to: compactFile)
      let process = Process()
      process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
      process.arguments = ["python3", "-c", script, prettyFile.path, compactFile.path, String(rounds)]
      let output = Pipe()
      process.standardOutput = output
      try process.run()
      let data = output.fileHandleForReading.readDataToEndOfFile()
      process.waitUntilExit()
      guard process.terminationStatus == 0 else { return nil }
      let values = String(decoding: data, as: UTF8.self).split(separator: "\n").compactMap { Double($0) }
      guard values.count == 4 else { return nil }
      return PythonTimes(parsePretty: values[0], parseCompact: values[1],
                         printPretty: values[2], printCompact: values[3])
    } catch {
      return nil
    }
  }
}
