/// A linearizability checker for a compare-and-swap register, as Knossos and Porcupine check
/// one: Wing and Gong's search over the orders a history allows, with Lowe's memoisation of
/// (operations linearized, register value) pairs already tried.
///
/// A history is a list of ``RegisterOperation``s, each with the time it was invoked and the
/// time it returned (or none, when its outcome is unknown). It is linearizable when the
/// operations can be put in one order that respects real time (an operation that returned
/// before another was invoked comes first) and in which each one's outcome is what a single
/// register would give: a read returns the last value written, a compare-and-swap succeeds
/// exactly when the register holds its expected value. An operation whose outcome is unknown
/// (its process crashed or timed out) may have taken effect at any time after its invocation,
/// or never; one cut short (its process died in a power cut) may have taken effect between
/// its invocation and the cut, or never.
///
/// `Sendable`: plain values.
struct RegisterOperation: Sendable, CustomStringConvertible {
  enum Call: Hashable, Sendable {
    case read
    case write(Int)
    case compareAndSwap(expected: Int, new: Int)
  }

  enum Outcome: Hashable, Sendable {
    /// It took effect; for a read, with the value it returned.
    case ok(read: Int? = nil)
    /// It did not take effect: a compare-and-swap that found another value (for a read or a
    /// write: one known not to have happened, which the checker leaves out).
    case fail
    /// It may or may not have taken effect, at any time after its invocation.
    case unknown
    /// It may or may not have taken effect, but not after `returned`: the moment its
    /// process's world ended (a power cut), after which nothing it did can take effect.
    case cutShort
  }

  var process: Int
  var call: Call
  var outcome: Outcome
  /// When the call was made and when it returned, on one clock (any unit). `returned` is
  /// ignored for an unknown outcome: such an operation never ends. For one cut short it is
  /// the latest moment it could have taken effect.
  var invoked: Int64
  var returned: Int64

  /// A read that returned `value`.
  static func read(_ value: Int, process: Int, _ invoked: Int64, _ returned: Int64) -> RegisterOperation {
    RegisterOperation(process: process, call: .read, outcome: .ok(read: value), invoked: invoked, returned: returned)
  }

  /// A write of `value` with `outcome`.
  static func write(_ value: Int, process: Int, _ invoked: Int64, _ returned: Int64, _ outcome: Outcome = .ok()) -> RegisterOperation {
    RegisterOperation(process: process, call: .write(value), outcome: outcome, invoked: invoked, returned: returned)
  }

  /// A compare-and-swap from `expected` to `new` with `outcome`.
  static func compareAndSwap(
    _ expected: Int, _ new: Int, process: Int, _ invoked: Int64, _ returned: Int64, _ outcome: Outcome
  ) -> RegisterOperation {
    RegisterOperation(process: process, call: .compareAndSwap(expected: expected, new: new), outcome: outcome, invoked: invoked, returned: returned)
  }

  var description: String {
    let what: String
    switch call {
    case .read: what = "read"
    case .write(let value): what = "write \(value)"
    case .compareAndSwap(let expected, let new): what = "cas \(expected)->\(new)"
    }
    let result: String
    switch outcome {
    case .ok(let value): result = value.map { "ok \($0)" } ?? "ok"
    case .fail: result = "fail"
    case .unknown: result = "unknown"
    case .cutShort: result = "cut short"
    }
    return "p\(process) \(what) \(result) [\(invoked), \(outcome == .unknown ? "∞" : String(returned))]"
  }

  /// The register after this operation takes effect on `value`, or `nil` when its outcome
  /// could not have come from a register holding `value`.
  func apply(to value: Int) -> Int? {
    switch (call, outcome) {
    case (.read, .ok(let read)): return read == value ? value : nil
    case (.write(let new), _): return new
    case (.compareAndSwap(let expected, let new), .ok), (.compareAndSwap(let expected, let new), .unknown),
         (.compareAndSwap(let expected, let new), .cutShort):
      return value == expected ? new : nil
    case (.compareAndSwap(let expected, _), .fail): return value == expected ? nil : value
    case (.read, _): return value
    }
  }
}

/// What ``checkLinearizability(_:initialValue:)`` found.
struct LinearizabilityResult: Sendable {
  /// Whether some order of the operations explains every outcome.
  var isLinearizable: Bool
  /// Configurations (operations linearized, register value) the search visited.
  var statesExplored: Int
  /// When not linearizable: the longest prefix of an order the search could build, and the
  /// operations that had returned by then but could not come next.
  var longestPrefix: [RegisterOperation] = []
  var blocked: [RegisterOperation] = []
}

/// Checks that `history` is linearizable for a register starting at `initialValue`
/// (see ``RegisterOperation``).
func checkLinearizability(_ history: [RegisterOperation], initialValue: Int = 0) -> LinearizabilityResult {
  // A read whose outcome is unknown has no effect to place; a read or write known to have
  // failed did not happen. Neither constrains the search.
  let operations = history.filter { operation in
    switch (operation.call, operation.outcome) {
    case (.read, .unknown), (.read, .cutShort), (.read, .fail), (.write, .fail): return false
    default: return true
    }
  }
  var search = LinearizationSearch(operations: operations)
  return search.run(initialValue: initialValue)
}

/// Wing and Gong's search over a doubly linked list of call and return events in time order,
/// with Lowe's cache of configurations already explored (as in Porcupine's `checkSingle`).
private struct LinearizationSearch {
  struct Event {
    var operation: Int
    var isCall: Bool
    var previous: Int
    var next: Int
  }

  /// A set of operation numbers, as words of bits.
  struct Linearized: Hashable {
    var words: [UInt64]
    init(count: Int) { words = Array(repeating: 0, count: (count + 63) / 64) }
    mutating func insert(_ index: Int) { words[index >> 6] |= 1 << UInt64(index & 63) }
    mutating func remove(_ index: Int) { words[index >> 6] &= ~(1 << UInt64(index & 63)) }
  }

  struct Configuration: Hashable {
    var linearized: Linearized
    var value: Int
  }

  let operations: [RegisterOperation]
  /// The call and return events in time order, then the list's head (index ``head``).
  var events: [Event] = []
  let head: Int
  /// For each operation, the index of its call event and of its return event.
  var callEvent: [Int]
  var returnEvent: [Int]

  init(operations: [RegisterOperation]) {
    self.operations = operations
    // Unknown outcomes return after everything (Int64.max); at equal times calls come
    // first, so operations that touch at one instant count as concurrent.
    var points: [(time: Int64, isCall: Bool, operation: Int)] = []
    for (index, operation) in operations.enumerated() {
      points.append((operation.invoked, true, index))
      points.append((operation.outcome == .unknown ? Int64.max : max(operation.returned, operation.invoked), false, index))
    }
    points.sort { a, b in a.time != b.time ? a.time < b.time : (a.isCall && !b.isCall) }
    callEvent = Array(repeating: 0, count: operations.count)
    returnEvent = Array(repeating: 0, count: operations.count)
    head = points.count
    for (index, point) in points.enumerated() {
      events.append(Event(operation: point.operation, isCall: point.isCall, previous: index == 0 ? head : index - 1,
                          next: index + 1 < points.count ? index + 1 : -1))
      if point.isCall { callEvent[point.operation] = index } else { returnEvent[point.operation] = index }
    }
    events.append(Event(operation: -1, isCall: false, previous: -1, next: points.isEmpty ? -1 : 0))
  }

  /// Takes an operation's call and return events out of the list.
  mutating func lift(_ operation: Int) {
    for event in [callEvent[operation], returnEvent[operation]] {
      let (previous, next) = (events[event].previous, events[event].next)
      events[previous].next = next
      if next >= 0 { events[next].previous = previous }
    }
  }

  /// Puts them back, in the reverse order of ``lift(_:)``.
  mutating func unlift(_ operation: Int) {
    for event in [returnEvent[operation], callEvent[operation]] {
      let (previous, next) = (events[event].previous, events[event].next)
      events[previous].next = event
      if next >= 0 { events[next].previous = event }
    }
  }

  mutating func run(initialValue: Int) -> LinearizabilityResult {
    var cache: Set<Configuration> = []
    // Each choice made: the operation, the value before it, and whether it was left out
    // without effect (a cut-short operation whose time was up) rather than put in the order.
    var stack: [(operation: Int, value: Int, leftOut: Bool)] = []
    var linearized = Linearized(count: operations.count)
    var value = initialValue
    var longest: [Int] = []
    var blockedAtLongest: [Int] = []
    var event = events[head].next
    while true {
      // Done when no event is left, or only operations of unknown outcome, which may never
      // have taken effect: their returns (at the end) are all that can be reached.
      if event < 0 || (!events[event].isCall && operations[events[event].operation].outcome == .unknown) {
        return LinearizabilityResult(isLinearizable: true, statesExplored: cache.count)
      }
      let current = events[event]
      if !current.isCall && operations[current.operation].outcome == .cutShort {
        // Its time is up and it did not take effect: take it out without an effect. Undoing
        // this comes back here, where the cache sends the search back further.
        var candidate = linearized
        candidate.insert(current.operation)
        if cache.insert(Configuration(linearized: candidate, value: value)).inserted {
          stack.append((current.operation, value, true))
          linearized = candidate
          lift(current.operation)
          event = events[head].next
          continue
        }
      }
      if current.isCall {
        let operation = current.operation
        if let next = operations[operation].apply(to: value) {
          var candidate = linearized
          candidate.insert(operation)
          if cache.insert(Configuration(linearized: candidate, value: next)).inserted {
            stack.append((operation, value, false))
            linearized = candidate
            value = next
            lift(operation)
            event = events[head].next
            continue
          }
        }
        event = current.next
      } else {
        // An operation returned that no order so far can place next: undo the last choice.
        if stack.count >= longest.count {
          longest = stack.map(\.operation)
          blockedAtLongest = unplacedOperations(upTo: event)
        }
        guard let (operation, previousValue, leftOut) = stack.popLast() else {
          return LinearizabilityResult(
            isLinearizable: false, statesExplored: cache.count,
            longestPrefix: longest.map { operations[$0] }, blocked: blockedAtLongest.map { operations[$0] })
        }
        linearized.remove(operation)
        value = previousValue
        unlift(operation)
        // Undoing a leaving out resumes at that return, which the cache now sends further
        // back; undoing a choice of call resumes with the next call.
        event = leftOut ? returnEvent[operation] : events[callEvent[operation]].next
      }
    }
  }

  /// The operations whose calls are still in the list before the return event `event`, and
  /// the one returning there: none of them could come next.
  func unplacedOperations(upTo event: Int) -> [Int] {
    var operations: [Int] = []
    var index = events[head].next
    while index >= 0 && index != event {
      if events[index].isCall { operations.append(events[index].operation) }
      index = events[index].next
    }
    let returning = events[event].operation
    return operations.contains(returning) ? operations : operations + [returning]
  }
}
