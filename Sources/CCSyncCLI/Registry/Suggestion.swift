/// "Did you mean" for a mistyped command or option: the nearest known name by edit distance,
/// when it is near enough to be a slip of the keyboard.
enum Suggestion {
  /// `"; did you mean 'get'?"` for the nearest of `candidates` to `typed`, or `""` when none
  /// is within a third of the typed length (at least 1, at most 3 edits).
  static func nearest(to typed: String, among candidates: [String]) -> String {
    let limit = max(1, min(3, typed.count / 3))
    let scored = candidates.map { (name: $0, distance: distance(typed, $0)) }
    guard let best = scored.min(by: { $0.distance < $1.distance }), best.distance <= limit else { return "" }
    return "; did you mean '\(best.name)'?"
  }

  /// The Damerau-Levenshtein distance (insertions, deletions, substitutions and swaps of two
  /// neighbours each count 1): `gte` is 1 from `get`.
  static func distance(_ left: String, _ right: String) -> Int {
    let a = Array(left), b = Array(right)
    if a.isEmpty { return b.count }
    if b.isEmpty { return a.count }
    var previousRow = [Int](repeating: 0, count: b.count + 1)
    var row = Array(0...b.count)
    var beforePrevious = row
    for i in 1...a.count {
      beforePrevious = previousRow
      previousRow = row
      row = [Int](repeating: 0, count: b.count + 1)
      row[0] = i
      for j in 1...b.count {
        let cost = a[i - 1] == b[j - 1] ? 0 : 1
        row[j] = min(previousRow[j] + 1, row[j - 1] + 1, previousRow[j - 1] + cost)
        if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
          row[j] = min(row[j], beforePrevious[j - 2] + 1)
        }
      }
    }
    return row[b.count]
  }
}
