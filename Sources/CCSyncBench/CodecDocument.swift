import CCSyncProcesses

// The benchmark's documents: a config-like Codable struct, generated deterministically, so
// every run (and every machine) measures the same bytes.

/// A settings file for a fleet of services: nested objects of 5 to 20 keys, arrays of
/// objects, strings with escapes and non-ASCII, integers, floats, Booleans and nulls.
struct CodecDocument: Codable, Equatable {
  struct Limits: Codable, Equatable {
    var cpu: Double
    var memoryBytes: Int
    var connections: Int
    var requestsPerSecond: Int
    var burst: Int
    var timeoutSeconds: Double
  }

  struct Owner: Codable, Equatable {
    var name: String
    var email: String
    var uid: UInt32
    var team: String
    var onCall: Bool
  }

  struct Endpoint: Codable, Equatable {
    var path: String
    var method: String
    var timeoutSeconds: Double
    var retries: Int
    var authenticated: Bool
  }

  /// Written with explicit `null`s (synthesized conformances leave `nil` out).
  struct Maintenance: Codable, Equatable {
    var window: String?
    var contact: String?
    var paused: Bool

    func encode(to encoder: any Encoder) throws {
      var container = encoder.container(keyedBy: CodingKeys.self)
      try container.encode(window, forKey: .window)
      try container.encode(contact, forKey: .contact)
      try container.encode(paused, forKey: .paused)
    }
  }

  struct Service: Codable, Equatable {
    var id: Int
    var name: String
    var description: String
    var host: String
    var port: Int
    var weight: Double
    var enabled: Bool
    var region: String
    var tags: [String]
    var labels: [String: String]
    var owner: Owner
    var limits: Limits
    var endpoints: [Endpoint]
    var maintenance: Maintenance
    var checksum: UInt64
  }

  struct Features: Codable, Equatable {
    var search: Bool
    var uploads: Bool
    var darkMode: Bool
    var betaChannel: Bool
    var telemetry: Bool
    var maxUploadBytes: Int
    var sampleRate: Double
  }

  var name: String
  var version: Int
  var generatedBy: String
  var defaults: Limits
  var features: Features
  var services: [Service]
}

/// Seeded (``SplitMix64``), so the documents are the same in every run.
struct BenchmarkRandom {
  private var source: SplitMix64

  init(seed: UInt64) { source = SplitMix64(seed: seed) }

  mutating func next() -> UInt64 { source.next() }

  mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
  mutating func pick<T>(_ choices: [T]) -> T { choices[below(choices.count)] }
  mutating func chance(_ percent: Int) -> Bool { below(100) < percent }
  /// A double with at most `digits` decimals, so its text stays short and config-like.
  mutating func decimal(below bound: Int, digits: Int) -> Double {
    var scale = 1
    for _ in 0..<digits { scale *= 10 }
    return Double(below(bound * scale)) / Double(scale)
  }
}

extension CodecDocument {
  static let words = ["alpha", "beta", "gamma", "delta", "edge", "cache", "queue", "auth",
                      "billing", "search", "index", "report", "mail", "media", "gateway", "sync"]
  static let regions = ["eu-west-1", "eu-central-1", "us-east-1", "us-west-2", "ap-south-1"]
  static let people = ["Ana Souza", "Björn Ølsen", "Chloé Dubois", "Dmitri Ivanov", "Eve Li",
                       "Fatima Zahra", "Günther Müller", "Hiro Tanaka", "Ingrid Bergström"]
  static let descriptions = [
    "Handles user sessions",
    "Serves \"hot\" keys from memory; falls back to disk",
    "Path: C:\\services\\legacy (kept for the old agent)",
    "Line one\nLine two\twith a tab",
    "Zürich · München · Kraków · 東京",
    "Emoji status: ✅ healthy, 🚧 maintenance",
    "Plain ASCII description of a background worker that compacts the queue every night",
  ]

  /// A document of `serviceCount` services, the same for the same arguments.
  static func generate(serviceCount: Int, seed: UInt64 = 42) -> CodecDocument {
    var random = BenchmarkRandom(seed: seed)
    func limits() -> Limits {
      Limits(cpu: random.decimal(below: 16, digits: 2), memoryBytes: (1 + random.below(64)) << 26,
             connections: 10 + random.below(10_000), requestsPerSecond: random.below(100_000),
             burst: random.below(500), timeoutSeconds: random.decimal(below: 120, digits: 1))
    }
    let services = (0..<serviceCount).map { index -> Service in
      let word = random.pick(words)
      let person = random.pick(people)
      let tagCount = 1 + random.below(4)
      var labels: [String: String] = ["tier": random.pick(["gold", "silver", "bronze"])]
      if random.chance(50) { labels["zone"] = "z\(random.below(9))" }
      if random.chance(30) { labels["cost-centre"] = "cc-\(1000 + random.below(9000))" }
      let endpoints = (0..<(1 + random.below(3))).map { _ in
        Endpoint(path: "/api/v\(1 + random.below(3))/\(random.pick(words))",
                 method: random.pick(["GET", "POST", "PUT", "DELETE"]),
                 timeoutSeconds: random.decimal(below: 60, digits: 2), retries: random.below(5),
                 authenticated: random.chance(80))
      }
      return Service(
        id: 100_000 + index, name: "\(word)-\(index)", description: random.pick(descriptions),
        host: "\(word)\(index).\(random.pick(regions)).example.com", port: 1024 + random.below(50_000),
        weight: random.decimal(below: 1, digits: 3), enabled: random.chance(85),
        region: random.pick(regions), tags: (0..<tagCount).map { _ in random.pick(words) },
        labels: labels,
        owner: Owner(name: person, email: "\(word).owner@example.com", uid: UInt32(1000 + random.below(60_000)),
                     team: random.pick(words), onCall: random.chance(20)),
        limits: limits(), endpoints: endpoints,
        maintenance: Maintenance(window: random.chance(30) ? "Sun 02:00-04:00 UTC" : nil,
                                 contact: random.chance(40) ? person : nil, paused: random.chance(5)),
        checksum: random.next())
    }
    return CodecDocument(
      name: "fleet settings", version: 7, generatedBy: "ccsync-bench codec", defaults: limits(),
      features: Features(search: true, uploads: false, darkMode: true, betaChannel: false,
                         telemetry: true, maxUploadBytes: 52_428_800, sampleRate: 0.125),
      services: services)
  }
}
