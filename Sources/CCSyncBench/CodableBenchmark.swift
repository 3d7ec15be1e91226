// The benchmark compares against Foundation's JSONEncoder/JSONDecoder, so it (and only it)
// imports Foundation; the CCSync library itself never does.
import CCSync
import Foundation

/// A settings-like document of moderate size: scalars, a nested array of structs, a
/// dictionary, an optional, a date.
struct BenchmarkDocument: Codable, Equatable {
  struct Server: Codable, Equatable {
    var host: String
    var port: Int
    var weight: Double
    var secure: Bool
    var labels: [String]
  }
  struct Owner: Codable, Equatable {
    var name: String
    var email: String
    var uid: UInt32
  }

  var name: String
  var version: Int
  var enabled: Bool
  var ratio: Double
  var tags: [String]
  var servers: [Server]
  var limits: [String: Int]
  var created: Date
  var owner: Owner?
  var note: String?

  static let sample = BenchmarkDocument(
    name: "production settings",
    version: 42,
    enabled: true,
    ratio: 0.75,
    tags: ["alpha", "beta", "gamma", "delta"],
    servers: (0..<20).map { index in
      Server(
        host: "host\(index).example.com", port: 8000 + index, weight: Double(index) / 7,
        secure: index % 2 == 0, labels: ["zone-\(index % 3)", "rack-\(index % 5)"])
    },
    limits: Dictionary(uniqueKeysWithValues: (0..<10).map { ("limit\($0)", $0 * 100) }),
    created: Date(timeIntervalSince1970: 1_795_986_324),
    owner: Owner(name: "ops", email: "ops@example.com", uid: 1000),
    note: nil)
}

/// Measures `body` over `iterations` runs, best of five rounds, in microseconds per run.
private func measure(iterations: Int, _ body: () throws -> Void) rethrows -> Double {
  let clock = ContinuousClock()
  var best = Duration.seconds(1_000_000)
  for _ in 0..<5 {
    let start = clock.now
    for _ in 0..<iterations { try body() }
    best = min(best, clock.now - start)
  }
  let (seconds, attoseconds) = best.components
  return (Double(seconds) * 1e6 + Double(attoseconds) / 1e12) / Double(iterations)
}

/// Prints how long encoding and decoding ``BenchmarkDocument`` takes with
/// `JSONValueEncoder`/`JSONValueDecoder` (struct to and from `JSONValue`) next to
/// Foundation's `JSONEncoder`/`JSONDecoder` (struct to and from JSON text). Build in release
/// mode. Exits the process with status 1 if a round trip goes wrong.
func runCodableBenchmark() {
  let document = BenchmarkDocument.sample
  let iterations = 2_000
  do {
    let treeEncoder = JSONValueEncoder()
    let treeDecoder = JSONValueDecoder()
    let foundationEncoder = JSONEncoder()
    foundationEncoder.dateEncodingStrategy = .iso8601
    let foundationDecoder = JSONDecoder()
    foundationDecoder.dateDecodingStrategy = .iso8601

    let tree = try treeEncoder.encode(document)
    let text = try foundationEncoder.encode(document)
    guard try treeDecoder.decode(BenchmarkDocument.self, from: tree) == document,
      try foundationDecoder.decode(BenchmarkDocument.self, from: text) == document
    else {
      print("codable benchmark: round trip mismatch")
      exit(1)
    }

    let treeEncode = try measure(iterations: iterations) { _ = try treeEncoder.encode(document) }
    let foundationEncode = try measure(iterations: iterations) { _ = try foundationEncoder.encode(document) }
    let treeDecode = try measure(iterations: iterations) {
      _ = try treeDecoder.decode(BenchmarkDocument.self, from: tree)
    }
    let foundationDecode = try measure(iterations: iterations) {
      _ = try foundationDecoder.decode(BenchmarkDocument.self, from: text)
    }

    func line(_ name: String, _ ours: Double, _ theirs: Double) -> String {
      let ratio = theirs / ours
      return "\(name): JSONValue \(formatted(ours)) us, Foundation \(formatted(theirs)) us, \(formatted(ratio))x"
    }
    print("codable benchmark (\(text.count)-byte document, best of 5 x \(iterations)):")
    print("  " + line("encode", treeEncode, foundationEncode))
    print("  " + line("decode", treeDecode, foundationDecode))
  } catch {
    print("codable benchmark failed: \(error)")
    exit(1)
  }
}

private func formatted(_ value: Double) -> String {
  let hundredths = (value * 100).rounded()
  return String(Int(hundredths) / 100) + "." + String(format: "%02d", Int(hundredths) % 100)
}
