@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

/// Random JSON pieces from a seeded generator (``SplitMix64``), so a failing seed fails again.
struct SeededJSONRandom: RandomNumberGenerator {
  private var source: SplitMix64

  init(seed: UInt64) { source = SplitMix64(seed: seed) }

  mutating func next() -> UInt64 { source.next() }

  /// Few keys, so objects at different places share keys and edits collide.
  static let keys = ["a", "b", "c", "d", "x.y", "0", ""]
  static let numbers = ["0", "1", "-2", "1.5", "1.50", "1e2", "100", "12345678901234567890"]

  mutating func pick<T>(_ choices: [T]) -> T { choices.randomElement(using: &self)! }

  /// A random value; containers only while `depth` is positive.
  mutating func value(depth: Int) -> JSONValue {
    switch Int.random(in: 0..<(depth > 0 ? 9 : 5), using: &self) {
    case 0: return .null
    case 1: return .bool(Bool.random(using: &self))
    case 2, 3: return .number(JSONNumber(text: pick(Self.numbers))!)
    case 4: return .string(pick(["", "s", "t", "ü"]))
    case 5: return .array((0..<Int.random(in: 0...3, using: &self)).map { _ in value(depth: depth - 1) })
    default: return object(depth: depth - 1)
    }
  }

  mutating func object(depth: Int) -> JSONValue {
    var object = JSONObject()
    for _ in 0..<Int.random(in: 0...4, using: &self) { object[pick(Self.keys)] = value(depth: depth) }
    return .object(object)
  }

  /// Sets, adds or removes one member of a random object in `document` (reached through
  /// objects only) and returns the member's key path, unless that path is equal to, inside or
  /// around one of `avoiding`; then changes nothing and returns `nil`.
  mutating func mutate(_ document: inout JSONValue, avoiding: [[String]] = []) -> [String]? {
    var objectPaths: [[String]] = []
    func collect(_ value: JSONValue, _ path: [String]) {
      guard case .object(let object) = value else { return }
      objectPaths.append(path)
      for member in object { collect(member.value, path + [member.key]) }
    }
    collect(document, [])
    guard !objectPaths.isEmpty else { return nil }
    let parent = pick(objectPaths)
    let key = pick(Self.keys)
    let path = parent + [key]
    let related = avoiding.contains { other in
      other.starts(with: path) || path.starts(with: other)
    }
    if related { return nil }
    // The path goes through objects only, so neither can throw.
    if Bool.random(using: &self) {
      try? document.setValue(value(depth: 2), at: JSONPath(tokens: path))
    } else {
      _ = try? document.removeValue(at: JSONPath(tokens: path))
    }
    return path
  }
}
