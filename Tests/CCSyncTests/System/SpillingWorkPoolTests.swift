import Testing
@testable import CCSyncSystem

/// `SpillingWorkPool`: a fixed number of threads for many lanes, and a spill thread once every
/// thread has been on one job past the bound while others wait.
@Suite struct SpillingWorkPoolTests {
  /// Two jobs that block take both kept threads; the jobs queued behind them still run, on a
  /// spill thread, while the blocked ones are still blocked.
  @Test func jobsBehindBlockedOnesGetASpillThread() {
    let pool = SpillingWorkPool(name: "test-spill", threadsKept: 2, spillAfter: .milliseconds(10))
    let gate = ConditionLock()
    let state = Protected((blocked: 0, released: false, ran: [Int]()))
    for _ in 0..<2 {
      pool.submit {
        state.withLock { $0.blocked += 1 }
        gate.withLock { while !state.withLock({ $0.released }) { gate.wait() } }
      }
    }
    #expect(waitUntil { state.withLock { $0.blocked } == 2 }, "the two blocking jobs never started")
    for index in 0..<5 {
      pool.submit { state.withLock { $0.ran.append(index) } }
    }
    #expect(waitUntil { state.withLock { $0.ran.count } == 5 }, "the jobs behind the blocked ones did not run")
    #expect(state.withLock { $0.ran } == [0, 1, 2, 3, 4], "they run in the order submitted")
    #expect(pool.spillsStarted >= 1)
    #expect(state.withLock { !$0.released }, "the blocking jobs were still blocked")
    state.withLock { $0.released = true }
    gate.withLock { gate.broadcast() }
    // Spill threads end once they find nothing to do: the kept two remain.
    #expect(waitUntil { pool.currentThreads == 2 }, "spill threads outlived their work: \(pool.currentThreads)")
  }

  /// Many short jobs at once take no more than the kept threads: none outlasts the bound.
  @Test func shortJobsNeverSpill() {
    let pool = SpillingWorkPool(name: "test-spill", threadsKept: 2, spillAfter: .seconds(30))
    let done = Protected(0)
    for _ in 0..<2000 {
      pool.submit { done.withLock { $0 += 1 } }
    }
    #expect(waitUntil { done.withLock { $0 } == 2000 })
    #expect(pool.spillsStarted == 0)
    #expect(pool.currentThreads <= 2)
  }
}
