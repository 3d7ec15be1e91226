import CCSyncSystem

/// Remembers, for the whole process, the answer to one run-time conformance question per type
/// ("is this type a dictionary?"), which the coders ask about every type they meet.
///
/// The runtime's answer to `type is any P.Type` is slow when it is "no": about ten thousand
/// instructions each time, a seventh of encoding a 10 KB document whose eight object types
/// were each asked about once. A program has few types, so the answers are kept forever.
/// The coders look here only when their own short list of recent answers misses, once per
/// type per call. `Sendable`: the table is behind a `Protected`.
package final class TypeConformanceCache: Sendable {
  private let answers = Protected<[ObjectIdentifier: Bool]>([:])
  private let check: @Sendable (Any.Type) -> Bool

  /// A cache of `check`'s answers.
  package init(_ check: @escaping @Sendable (Any.Type) -> Bool) {
    self.check = check
  }

  /// Whether `type` conforms: from the table, or from `check` the first time it is asked.
  package func answer(for type: Any.Type) -> Bool {
    let identifier = ObjectIdentifier(type)
    if let known = answers.withLock({ $0[identifier] }) { return known }
    let answer = check(type)
    answers.withLock { $0[identifier] = answer }
    return answer
  }
}

/// The answers one coding call met most recently, in front of a ``TypeConformanceCache``: a
/// document has a handful of object types, met again and again, and a short scan needs no
/// lock. Belongs to one call on one thread.
package struct RecentTypeAnswers {
  package static let limit = 16
  private var answers: [(type: ObjectIdentifier, conforms: Bool)] = []

  /// Whether `type` conforms: from this list, else from `cache` (then remembered here).
  package mutating func answer(for type: Any.Type, from cache: TypeConformanceCache) -> Bool {
    let identifier = ObjectIdentifier(type)
    for known in answers where known.type == identifier { return known.conforms }
    let conforms = cache.answer(for: type)
    if answers.count == RecentTypeAnswers.limit { answers.removeFirst() }
    if answers.isEmpty { answers.reserveCapacity(RecentTypeAnswers.limit) }  // one allocation, not five
    answers.append((identifier, conforms))
    return conforms
  }
}
