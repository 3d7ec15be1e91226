import Foundation
import Testing

/// The compare-and-swap register checker (Support/Linearizability.swift): histories known to
/// be linearizable pass, histories known not to be are reported, and a history of 400
/// operations from 5 processes, some with unknown outcomes, is checked in well under a second.
@Suite struct LinearizabilityCheckerTests {
  typealias Op = RegisterOperation

  @Test func sequentialHistoryIsLinearizable() {
    let history: [Op] = [
      .write(1, process: 0, 0, 1),
      .read(1, process: 1, 2, 3),
      .compareAndSwap(1, 2, process: 0, 4, 5, .ok()),
      .compareAndSwap(1, 3, process: 1, 6, 7, .fail),
      .read(2, process: 0, 8, 9),
    ]
    #expect(checkLinearizability(history).isLinearizable)
  }

  @Test func aReadConcurrentWithAWriteMaySeeEitherValue() {
    for seen in [0, 1] {
      let history: [Op] = [.write(1, process: 0, 0, 10), .read(seen, process: 1, 2, 3)]
      #expect(checkLinearizability(history).isLinearizable, "read \(seen)")
    }
    // Two reads inside one write: the first may see the new value only if the second does.
    let newThenOld: [Op] = [.write(1, process: 0, 0, 10), .read(1, process: 1, 1, 2), .read(0, process: 2, 3, 4)]
    #expect(!checkLinearizability(newThenOld).isLinearizable)
    let oldThenNew: [Op] = [.write(1, process: 0, 0, 10), .read(0, process: 1, 1, 2), .read(1, process: 2, 3, 4)]
    #expect(checkLinearizability(oldThenNew).isLinearizable)
  }

  @Test func aReadOlderThanACompletedWriteIsReported() {
    let history: [Op] = [
      .write(1, process: 0, 0, 1),
      .write(2, process: 0, 2, 3),
      .read(1, process: 1, 4, 5),  // 2 was written, completely, before this read began
    ]
    let result = checkLinearizability(history)
    #expect(!result.isLinearizable)
    #expect(result.blocked.contains { $0.call == .read })
  }

  @Test func twoCompareAndSwapsFromOneValueCannotBothSucceed() {
    let bothWon: [Op] = [
      .compareAndSwap(0, 1, process: 0, 0, 10, .ok()),
      .compareAndSwap(0, 2, process: 1, 0, 10, .ok()),
    ]
    #expect(!checkLinearizability(bothWon).isLinearizable)
    let oneWon: [Op] = [
      .compareAndSwap(0, 1, process: 0, 0, 10, .ok()),
      .compareAndSwap(0, 2, process: 1, 0, 10, .fail),
      .read(1, process: 2, 11, 12),
    ]
    #expect(checkLinearizability(oneWon).isLinearizable)
    // A compare-and-swap that failed although nothing else ever changed the register.
    let wrongFailure: [Op] = [.compareAndSwap(0, 1, process: 0, 0, 1, .fail)]
    #expect(!checkLinearizability(wrongFailure).isLinearizable)
  }

  @Test func anUnknownOutcomeMayTakeEffectLateOrNever() {
    // Never: later reads see the initial value.
    let never: [Op] = [.write(7, process: 0, 0, 0, .unknown), .read(0, process: 1, 5, 6), .read(0, process: 1, 7, 8)]
    #expect(checkLinearizability(never).isLinearizable)
    // Late: long after its process gave up, a read sees it.
    let late: [Op] = [.write(7, process: 0, 0, 0, .unknown), .read(0, process: 1, 5, 6), .read(7, process: 1, 100, 101)]
    #expect(checkLinearizability(late).isLinearizable)
    // But once seen, it cannot be undone, and it cannot take effect before its call.
    let undone: [Op] = [.write(7, process: 0, 0, 0, .unknown), .read(7, process: 1, 5, 6), .read(0, process: 1, 7, 8)]
    #expect(!checkLinearizability(undone).isLinearizable)
    let early: [Op] = [.read(7, process: 1, 0, 1), .write(7, process: 0, 5, 0, .unknown)]
    #expect(!checkLinearizability(early).isLinearizable)
    // An unknown compare-and-swap takes effect only where its expected value holds.
    let casLate: [Op] = [
      .compareAndSwap(1, 9, process: 0, 0, 0, .unknown), .write(1, process: 1, 5, 6), .read(9, process: 1, 7, 8),
    ]
    #expect(checkLinearizability(casLate).isLinearizable)
    let casImpossible: [Op] = [.compareAndSwap(1, 9, process: 0, 0, 0, .unknown), .read(9, process: 1, 7, 8)]
    #expect(!checkLinearizability(casImpossible).isLinearizable)
  }

  @Test func anOperationCutShortTakesEffectBeforeTheCutOrNever() {
    // Cut short at 5: it may have taken effect before, or not at all.
    let before: [Op] = [.write(7, process: 0, 0, 5, .cutShort), .read(7, process: 1, 10, 11)]
    #expect(checkLinearizability(before).isLinearizable)
    let never: [Op] = [.write(7, process: 0, 0, 5, .cutShort), .read(0, process: 1, 10, 11)]
    #expect(checkLinearizability(never).isLinearizable)
    // Not after: unlike an unknown outcome, it cannot show up once the cut is over.
    let after: [Op] = [.write(7, process: 0, 0, 5, .cutShort), .read(0, process: 1, 10, 11), .read(7, process: 1, 12, 13)]
    #expect(!checkLinearizability(after).isLinearizable)
    var unknown = after
    unknown[0].outcome = .unknown
    #expect(checkLinearizability(unknown).isLinearizable)
    // Seen before the cut and gone after it: a read returned a value the cut undid.
    let undone: [Op] = [.write(7, process: 0, 0, 5, .cutShort), .read(7, process: 1, 1, 2), .read(0, process: 1, 10, 11)]
    #expect(!checkLinearizability(undone).isLinearizable)
    // Several cut short at once, one of which took effect: the search leaves out the others.
    let several: [Op] = [
      .write(1, process: 0, 0, 5, .cutShort), .write(2, process: 1, 0, 5, .cutShort),
      .compareAndSwap(0, 3, process: 2, 0, 5, .cutShort), .read(2, process: 3, 10, 11),
      .compareAndSwap(2, 4, process: 3, 12, 13, .ok()), .read(4, process: 3, 14, 15),
    ]
    #expect(checkLinearizability(several).isLinearizable)
  }

  /// 400 operations from 5 processes with 5 unknown outcomes, made linearizable by
  /// construction, then spoiled two ways: a read of a value a completed write replaced, and
  /// a final read of a value never written (which makes the search exhaust every order).
  @Test(arguments: [1, 2, 3] as [UInt64])
  func fourHundredConcurrentOperationsAreCheckedQuickly(seed: UInt64) throws {
    let history = Self.generatedHistory(count: 400, processes: 5, unknowns: 5, seed: seed)
    let clock = ContinuousClock()

    let start = clock.now
    let result = checkLinearizability(history, initialValue: 0)
    let passing = clock.now - start
    #expect(result.isLinearizable, "seed \(seed): \(result.blocked)")

    let stale = try #require(Self.withStaleRead(history))
    let staleStart = clock.now
    let staleResult = checkLinearizability(stale, initialValue: 0)
    let failingStale = clock.now - staleStart
    #expect(!staleResult.isLinearizable, "seed \(seed): a stale read was not reported")

    let end = history.map { $0.outcome == .unknown ? $0.invoked : $0.returned }.max() ?? 0
    let impossible = history + [.read(-1, process: 9, end + 1, end + 2)]
    let impossibleStart = clock.now
    let impossibleResult = checkLinearizability(impossible, initialValue: 0)
    let failingImpossible = clock.now - impossibleStart
    #expect(!impossibleResult.isLinearizable)

    let concurrency = Self.maximumConcurrency(history)
    FaultTools.report("linearizability.seed-\(seed).concurrency", concurrency)
    FaultTools.report("linearizability.seed-\(seed).linearizable", "\(passing) \(result.statesExplored) states")
    FaultTools.report("linearizability.seed-\(seed).stale-read", "\(failingStale) \(staleResult.statesExplored) states")
    FaultTools.report("linearizability.seed-\(seed).impossible-read", "\(failingImpossible) \(impossibleResult.statesExplored) states")
    #expect(concurrency >= 4, "the generated history is hardly concurrent")
    #expect(passing < .seconds(5) && failingStale < .seconds(5) && failingImpossible < .seconds(5))
  }

  // MARK: - Generated histories

  /// A history that is linearizable by construction: each operation gets a call time, a
  /// return time and a moment in between where it takes effect, and outcomes are computed
  /// by applying the operations in the order of those moments to one register. Written
  /// values are unique. `unknowns` writes or compare-and-swaps get an unknown outcome; half
  /// of them took effect.
  static func generatedHistory(count: Int, processes: Int, unknowns: Int, seed: UInt64) -> [Op] {
    var random = SeededJSONRandom(seed: seed)
    var freeAt = Array(repeating: Int64(0), count: processes)
    var timed: [(op: Op, effect: Int64, kind: Int)] = []
    for _ in 0..<count {
      let process = Int.random(in: 0..<processes, using: &random)
      let invoked = freeAt[process] + Int64.random(in: 0...3, using: &random)
      let returned = invoked + Int64.random(in: 1...20, using: &random)
      let effect = Int64.random(in: invoked...returned, using: &random)
      freeAt[process] = returned + 1
      let kind = Int.random(in: 0..<3, using: &random)  // read, write, compare-and-swap
      timed.append((Op(process: process, call: .read, outcome: .ok(), invoked: invoked, returned: returned), effect, kind))
    }
    var unknown = Set<Int>()
    while unknown.count < unknowns {
      let index = Int.random(in: 0..<count, using: &random)
      if timed[index].kind != 0 { unknown.insert(index) }
    }
    var value = 0
    var written = [0]
    var nextValue = 1
    for index in timed.indices.sorted(by: { timed[$0].effect < timed[$1].effect }) {
      var op = timed[index].op
      let tookEffect = !unknown.contains(index) || Bool.random(using: &random)
      switch timed[index].kind {
      case 0:
        op.outcome = .ok(read: value)
      case 1:
        op.call = .write(nextValue)
        if tookEffect { value = nextValue; written.append(value) }
        nextValue += 1
      default:
        let expected = Bool.random(using: &random) ? value : random.pick(Array(written.suffix(3)))
        op.call = .compareAndSwap(expected: expected, new: nextValue)
        if expected == value && tookEffect {
          value = nextValue
          written.append(value)
          op.outcome = .ok()
        } else {
          op.outcome = expected == value ? .ok() : .fail  // replaced below when unknown
        }
        if expected == value && !tookEffect { op.outcome = .unknown }
        nextValue += 1
      }
      if unknown.contains(index) { op.outcome = .unknown }
      timed[index].op = op
    }
    return timed.map(\.op)
  }

  /// `history` with a read, after a completed write of B that began after a completed write
  /// of A had returned, that returns A: no order can explain it (values are unique).
  static func withStaleRead(_ history: [Op]) -> [Op]? {
    let writes = history.enumerated().filter { _, op in
      if case .write = op.call, op.outcome == .ok() { return true }
      return false
    }
    for (_, first) in writes {
      guard let second = writes.first(where: { $0.element.invoked > first.returned })?.element,
            case .write(let old) = first.call else { continue }
      return history + [.read(old, process: 9, second.returned + 1, second.returned + 2)]
    }
    return nil
  }

  /// The most operations in flight at one time (an unknown one stays in flight).
  static func maximumConcurrency(_ history: [Op]) -> Int {
    var points: [(Int64, Int)] = []
    for op in history {
      points.append((op.invoked, 1))
      if op.outcome != .unknown { points.append((op.returned + 1, -1)) }
    }
    var current = 0
    var most = 0
    for (_, change) in points.sorted(by: { $0.0 != $1.0 ? $0.0 < $1.0 : $0.1 < $1.1 }) {
      current += change
      most = max(most, current)
    }
    return most
  }
}
