import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

/// The watcher pauses between wake-ups only while unwatched events keep coming fast.
@Suite struct NoiseGateTests {
  let window = NoiseGate.window
  let threshold = NoiseGate.threshold

  @Test func aQuietDirectoryNeverPauses() {
    var gate = NoiseGate()
    // A save a millisecond apart for a second: a few unwatched wake-ups each, far below.
    var now = ContinuousClock.now
    for _ in 0..<1000 {
      let pauses = gate.recordUnwatchedWakeUp(now: now)
      #expect(!pauses)
      now += .milliseconds(1)
    }
  }

  @Test func reachingTheThresholdWithinAWindowPauses() {
    var gate = NoiseGate()
    let start = ContinuousClock.now
    for index in 0..<(threshold - 1) {
      let pauses = gate.recordUnwatchedWakeUp(now: start + .microseconds(index))
      #expect(!pauses)
    }
    let pauses = gate.recordUnwatchedWakeUp(now: start + .microseconds(threshold))
    #expect(pauses)
  }

  @Test func aNoisyWindowKeepsTheNextOnePausingThenAGapEndsIt() {
    var gate = NoiseGate()
    let start = ContinuousClock.now
    for index in 0..<threshold { _ = gate.recordUnwatchedWakeUp(now: start + .microseconds(index)) }
    // The first wake-up of the next window still pauses: the noise is going on.
    let nextWindow = gate.recordUnwatchedWakeUp(now: start + window + .nanoseconds(1))
    #expect(nextWindow)
    // A window with a single wake-up, then quiet: the window after it does not pause.
    let windowAfter = gate.recordUnwatchedWakeUp(now: start + window * 2 + .nanoseconds(2))
    #expect(!windowAfter)
    // After a long gap nothing of the old noise remains.
    var later = NoiseGate()
    for index in 0..<threshold { _ = later.recordUnwatchedWakeUp(now: start + .microseconds(index)) }
    let afterGap = later.recordUnwatchedWakeUp(now: start + window * 3)
    #expect(!afterGap)
  }

  /// Paused, the thread wakes at most once a pause, under the threshold: noise going on at
  /// that rate keeps the pause on, window after window, until it falls below `sustain`.
  @Test func noiseGoingOnWhilePausedKeepsThePause() {
    var gate = NoiseGate()
    let start = ContinuousClock.now
    for index in 0..<threshold { _ = gate.recordUnwatchedWakeUp(now: start + .microseconds(index)) }
    var now = start + window
    for _ in 0..<1000 {  // ten windows, a wake-up a millisecond: the paused rate
      let pauses = gate.recordUnwatchedWakeUp(now: now)
      #expect(pauses)
      now += NoiseGate.pause
    }
    for _ in 0..<(NoiseGate.sustain - 1) {  // a window with fewer: the next does not pause
      _ = gate.recordUnwatchedWakeUp(now: now)
      now += window / NoiseGate.sustain
    }
    let afterSlowWindow = gate.recordUnwatchedWakeUp(now: now + window)
    #expect(!afterSlowWindow)
  }
}
