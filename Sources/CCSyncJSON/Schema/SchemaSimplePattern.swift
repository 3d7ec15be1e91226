import CCSyncSystem

/// A matcher for the small ECMA-262 subset most schema patterns use: `^` and `$` anchors,
/// literal ASCII characters, `.`, classes of ASCII characters and ranges (`[a-z0-9._-]`,
/// `[^/]`), `\d` and `\w` (and their negations outside classes), escaped punctuation, and the
/// greedy or lazy quantifiers `*`, `+`, `?`, `{n}`, `{n,}`, `{n,m}`. It works on the UTF-8
/// bytes in place, a code point per step, and backtracks; no allocation per match.
///
/// Anything else (groups, alternation, `\s`, `\b`, Unicode escapes, non-ASCII literals)
/// makes ``init(_:)`` return `nil`, and ``SchemaPattern`` uses Swift's `Regex` instead: this
/// is a fast path, never a second dialect.
struct SchemaSimplePattern: Sendable {
  /// A set of ASCII bytes, as two 64-bit masks.
  struct ByteSet: Sendable {
    var low: UInt64 = 0
    var high: UInt64 = 0

    mutating func insert(_ byte: UInt8) {
      if byte < 64 { low |= 1 << UInt64(byte) } else { high |= 1 << UInt64(byte - 64) }
    }

    mutating func insert(_ range: ClosedRange<UInt8>) {
      for byte in range { insert(byte) }
    }

    func contains(_ byte: UInt8) -> Bool {
      byte < 64 ? low & (1 << UInt64(byte)) != 0 : high & (1 << UInt64(byte &- 64)) != 0
    }

    static let digits: ByteSet = { var set = ByteSet(); set.insert(UInt8(ascii: "0")...UInt8(ascii: "9")); return set }()
    static let word: ByteSet = {
      var set = digits
      set.insert(UInt8(ascii: "a")...UInt8(ascii: "z"))
      set.insert(UInt8(ascii: "A")...UInt8(ascii: "Z"))
      set.insert(UInt8(ascii: "_"))
      return set
    }()
  }

  /// What one step matches: one code point.
  enum Atom: Sendable {
    case byte(UInt8)
    case any
    case set(ByteSet, negated: Bool)
  }

  struct Piece: Sendable {
    var atom: Atom
    var minimum: Int
    var maximum: Int
  }

  let anchoredStart: Bool
  let anchoredEnd: Bool
  let pieces: [Piece]

  /// Parses `source`, or returns `nil` when it uses anything outside the subset.
  init?(_ source: String) {
    let bytes = Array(source.utf8)
    guard bytes.allSatisfy({ $0 < 0x80 }) else { return nil }
    var index = 0
    var pieces: [Piece] = []
    var anchoredStart = false
    var anchoredEnd = false
    if bytes.first == UInt8(ascii: "^") {
      anchoredStart = true
      index = 1
    }
    while index < bytes.count {
      let byte = bytes[index]
      if byte == UInt8(ascii: "$") {
        guard index == bytes.count - 1 else { return nil }
        anchoredEnd = true
        break
      }
      let atom: Atom
      switch byte {
      case UInt8(ascii: "."):
        atom = .any
        index += 1
      case UInt8(ascii: "["):
        guard let (set, negated, end) = SchemaSimplePattern.parseClass(bytes, from: index + 1) else { return nil }
        atom = .set(set, negated: negated)
        index = end
      case UInt8(ascii: "\\"):
        guard index + 1 < bytes.count else { return nil }
        let escaped = bytes[index + 1]
        switch escaped {
        case UInt8(ascii: "d"): atom = .set(.digits, negated: false)
        case UInt8(ascii: "D"): atom = .set(.digits, negated: true)
        case UInt8(ascii: "w"): atom = .set(.word, negated: false)
        case UInt8(ascii: "W"): atom = .set(.word, negated: true)
        default:
          guard SchemaSimplePattern.isPunctuation(escaped) else { return nil }
          atom = .byte(escaped)
        }
        index += 2
      case UInt8(ascii: "("), UInt8(ascii: ")"), UInt8(ascii: "|"), UInt8(ascii: "*"), UInt8(ascii: "+"),
        UInt8(ascii: "?"), UInt8(ascii: "{"), UInt8(ascii: "}"), UInt8(ascii: "^"), UInt8(ascii: "]"):
        return nil
      default:
        guard byte >= 0x20 else { return nil }
        atom = .byte(byte)
        index += 1
      }
      var piece = Piece(atom: atom, minimum: 1, maximum: 1)
      if index < bytes.count {
        switch bytes[index] {
        case UInt8(ascii: "*"): (piece.minimum, piece.maximum) = (0, .max); index += 1
        case UInt8(ascii: "+"): (piece.minimum, piece.maximum) = (1, .max); index += 1
        case UInt8(ascii: "?"): (piece.minimum, piece.maximum) = (0, 1); index += 1
        case UInt8(ascii: "{"):
          guard let (minimum, maximum, end) = SchemaSimplePattern.parseBraces(bytes, from: index + 1) else { return nil }
          (piece.minimum, piece.maximum) = (minimum, maximum)
          index = end
        default: break
        }
        // A lazy quantifier matches the same strings (only captures would differ).
        if piece.minimum != 1 || piece.maximum != 1, index < bytes.count, bytes[index] == UInt8(ascii: "?") { index += 1 }
        if index < bytes.count, [UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "?"), UInt8(ascii: "{")].contains(bytes[index]) {
          return nil
        }
      }
      pieces.append(piece)
    }
    self.anchoredStart = anchoredStart
    self.anchoredEnd = anchoredEnd
    self.pieces = pieces
  }

  static func isPunctuation(_ byte: UInt8) -> Bool {
    byte >= 0x21 && byte < 0x7F && !ByteSet.word.contains(byte)
  }

  /// A class after its `[`: the set, whether it is negated, and the index after its `]`.
  static func parseClass(_ bytes: [UInt8], from start: Int) -> (ByteSet, Bool, Int)? {
    var index = start
    var negated = false
    if index < bytes.count, bytes[index] == UInt8(ascii: "^") {
      negated = true
      index += 1
    }
    var set = ByteSet()
    var first = true
    while index < bytes.count {
      var byte = bytes[index]
      if byte == UInt8(ascii: "]") {
        guard !first else { return nil }
        return (set, negated, index + 1)
      }
      first = false
      if byte == UInt8(ascii: "[") { return nil }
      if byte == UInt8(ascii: "\\") {
        guard index + 1 < bytes.count else { return nil }
        let escaped = bytes[index + 1]
        index += 2
        switch escaped {
        case UInt8(ascii: "d"): set.low |= ByteSet.digits.low; set.high |= ByteSet.digits.high; continue
        case UInt8(ascii: "w"): set.low |= ByteSet.word.low; set.high |= ByteSet.word.high; continue
        default:
          guard isPunctuation(escaped) else { return nil }
          byte = escaped
        }
      } else {
        index += 1
      }
      // A range `a-z`, unless the `-` is last (`[a-]`).
      if index + 1 < bytes.count, bytes[index] == UInt8(ascii: "-"), bytes[index + 1] != UInt8(ascii: "]") {
        var upper = bytes[index + 1]
        index += 2
        if upper == UInt8(ascii: "\\") {
          guard index < bytes.count, isPunctuation(bytes[index]) else { return nil }
          upper = bytes[index]
          index += 1
        } else if upper == UInt8(ascii: "[") {
          return nil
        }
        guard byte <= upper else { return nil }
        set.insert(byte...upper)
      } else {
        set.insert(byte)
      }
    }
    return nil
  }

  /// `{n}`, `{n,}` or `{n,m}` after its `{`: the bounds and the index after the `}`.
  static func parseBraces(_ bytes: [UInt8], from start: Int) -> (Int, Int, Int)? {
    var index = start
    func number() -> Int? {
      let begin = index
      var value = 0
      while index < bytes.count, bytes[index] &- UInt8(ascii: "0") < 10, value < 100_000 {
        value = value * 10 + Int(bytes[index] - UInt8(ascii: "0"))
        index += 1
      }
      return index > begin ? value : nil
    }
    guard let minimum = number() else { return nil }
    var maximum = minimum
    if index < bytes.count, bytes[index] == UInt8(ascii: ",") {
      index += 1
      maximum = number() ?? .max
    }
    guard index < bytes.count, bytes[index] == UInt8(ascii: "}"), minimum <= maximum else { return nil }
    return (minimum, maximum, index + 1)
  }

  /// Whether the pattern matches somewhere in `string`.
  ///
  /// Plain backtracking first; a pattern that backtracks more than ``stepBudget`` steps
  /// (`^a*a*a*a*b$` on a long run of `a`s) starts again remembering which (piece, position)
  /// pairs failed, which bounds the work by pieces × length² instead of growing
  /// exponentially.
  func matches(_ string: String) -> Bool {
    var string = string
    return string.withUTF8 { bytes -> Bool in
      var budget = SchemaSimplePattern.stepBudget
      var failed: [Bool] = []
      if let found = search(bytes, budget: &budget, failed: &failed) { return found }
      failed = [Bool](repeating: false, count: pieces.count * (bytes.count + 1))
      budget = .max
      return search(bytes, budget: &budget, failed: &failed) ?? false
    }
  }

  /// Backtracking steps one plain search may take before it starts remembering failures.
  static let stepBudget = 10_000

  /// Tries each start (only the first when anchored); `nil` when the budget ran out.
  private func search(_ bytes: UnsafeBufferPointer<UInt8>, budget: inout Int, failed: inout [Bool]) -> Bool? {
    if anchoredStart { return match(0, at: 0, in: bytes, budget: &budget, failed: &failed) }
    var start = 0
    while true {
      guard let found = match(0, at: start, in: bytes, budget: &budget, failed: &failed) else { return nil }
      if found { return true }
      guard start < bytes.count else { return false }
      start += SchemaSimplePattern.scalarLength(bytes[start])
    }
  }

  static func scalarLength(_ lead: UInt8) -> Int {
    lead < 0x80 ? 1 : (lead < 0xE0 ? 2 : (lead < 0xF0 ? 3 : 4))
  }

  /// Where one step of `atom` from `position` ends, or `nil` when it does not match there.
  @inline(__always)
  func step(_ atom: Atom, _ position: Int, _ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
    guard position < bytes.count else { return nil }
    let byte = bytes[position]
    switch atom {
    case .byte(let expected):
      return byte == expected ? position + 1 : nil
    case .any:
      if byte == 0x0A || byte == 0x0D { return nil }
      // U+2028 and U+2029, the other line terminators `.` does not match.
      if byte == 0xE2, position + 2 < bytes.count, bytes[position + 1] == 0x80, bytes[position + 2] & 0xFE == 0xA8 { return nil }
      return position + SchemaSimplePattern.scalarLength(byte)
    case .set(let set, let negated):
      if byte < 0x80 { return set.contains(byte) != negated ? position + 1 : nil }
      return negated ? position + SchemaSimplePattern.scalarLength(byte) : nil
    }
  }

  /// Whether pieces from `pieceIndex` on match from `position` to the end of the pattern;
  /// `nil` when the budget ran out. `failed`, when not empty, remembers the pairs that did
  /// not match (a pair always gives the same answer: there are no captures).
  func match(
    _ pieceIndex: Int, at position: Int, in bytes: UnsafeBufferPointer<UInt8>, budget: inout Int, failed: inout [Bool]
  ) -> Bool? {
    guard pieceIndex < pieces.count else { return !anchoredEnd || position == bytes.count }
    let memo = pieceIndex * (bytes.count + 1) + position
    if !failed.isEmpty, failed[memo] { return false }
    budget -= 1
    guard budget > 0 else { return nil }
    let piece = pieces[pieceIndex]
    var count = 0
    var end = position
    while count < piece.maximum, let next = step(piece.atom, end, bytes) {
      end = next
      count += 1
    }
    if count >= piece.minimum {
      while true {
        guard let found = match(pieceIndex + 1, at: end, in: bytes, budget: &budget, failed: &failed) else { return nil }
        if found { return true }
        if count == piece.minimum { break }
        // Back one code point: over its continuation bytes to its lead byte.
        end -= 1
        while end > position, bytes[end] & 0xC0 == 0x80 { end -= 1 }
        count -= 1
      }
    }
    if !failed.isEmpty { failed[memo] = true }
    return false
  }
}
