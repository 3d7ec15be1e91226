import CCSyncSystem

/// The state and the threads behind one `FileWatcher`: the loop's leader and a standby that
/// takes the loop over when a handler outstays ``LoopHandOver/bound``.
///
/// `Sendable`: all mutable state is inside `state`, a `Protected`, and `handOver`. The threads
/// hold strong references until they end; `FileWatcher.deinit` ends them.
final class WatcherCore: Sendable {
  let state: Protected<WatcherState>
  let handOver = LoopHandOver<FileWatchReason>(serializesCalls: true)
  private let threadName: String
  private let requestedPolling: Bool

  init(pollInterval: Duration?, fallbackPollInterval: Duration, safetyRecheckInterval: Duration?,
       faults: WatcherFaults, diagnostics: @escaping @Sendable (String) -> Void, threadName: String) {
    state = Protected(WatcherState(
      pollInterval: pollInterval, fallbackPollInterval: fallbackPollInterval,
      safetyRecheckInterval: safetyRecheckInterval, faults: faults, diagnostics: diagnostics))
    self.threadName = threadName
    requestedPolling = pollInterval != nil
  }

  /// Starts the thread (and opens inotify) on first use. Runs under the lock.
  private func startIfNeeded(_ state: inout WatcherState) {
    guard !state.started, !state.stopping else { return }
    do {
      let wakeUp = try WakeUpChannel()
      state.wakeUp = wakeUp
      if !requestedPolling {
        do throws(SystemError) {
          if let code = state.faults.initError {
            throw SystemError(code: code, operation: "inotify_init1")
          }
          state.inotify = try InotifyInstance()
        } catch {
          state.fallBackToPolling(error)
        }
      }
      try handOver.startThread(name: threadName) { [self] in serve(wakeUp, leading: true) }
      state.started = true
    } catch {
      state.diagnostics("ccsync: cannot start the file watcher thread (\(error)); changes by other processes will not be noticed")
    }
  }

  /// Adds a registration; see `FileWatcher.watch`.
  func register(path: String, handler: @escaping @Sendable (FileWatchReason) -> Void) -> RegistrationID {
    state.withLock { state in
      startIfNeeded(&state)
      let id = state.register(path: path, handler: handler)
      state.wakeUp?.wakeUp()  // The thread's next deadline may have moved.
      return id
    }
  }

  func unregister(_ id: RegistrationID) {
    let handler = state.withLock { state in
      defer { state.wakeUp?.wakeUp() }
      return state.unregister(id)
    }
    _ = handler  // Released here, outside the lock.
  }

  func recheck(_ id: RegistrationID, after delay: Duration) {
    state.withLock { state in
      guard state.registrations[id] != nil else { return }
      state.recheckDeadlines[id, default: []].append(.now + delay)
      state.wakeUp?.wakeUp()
    }
  }

  /// Ends the threads; waits for them unless called from one (a handler dropping the last
  /// reference), in which case they end by themselves once their handlers return.
  func stop() {
    state.withLock { state in
      state.stopping = true
      state.wakeUp?.wakeUp()
    }
    handOver.stop()
  }

  /// One thread of the watcher: leads the loop, and when its loop was taken over while it was
  /// in a handler, stands by (or ends, when another thread stands by or the watcher stops).
  private func serve(_ wakeUp: WakeUpChannel, leading: Bool) {
    var resuming = false
    if !leading {
      guard handOver.standBy(isNew: true) else { return }
      resuming = true
    }
    while true {
      state.withLock { $0.threadID = BackgroundThread.currentThreadID() }
      guard run(wakeUp, resuming: resuming) == .replaced, handOver.standBy(isNew: false) else { return }
      resuming = true
    }
  }

  /// The leader's loop: wait in `poll` on the wake-up pipe and the inotify descriptor until
  /// the next timer, handle what came, then call the handlers outside the lock. `resuming`:
  /// the thread has just taken the loop over, and first makes the calls the old leader left.
  /// Returns `.replaced` when the loop was taken over during a turn, `.done` when it stopped.
  private func run(_ wakeUp: WakeUpChannel, resuming: Bool) -> LoopHandOver<FileWatchReason>.TurnEnd {
    if resuming, deliver(nil, wakeUp) == .replaced { return .replaced }
    var noise = NoiseGate()
    var pauseFirst = false
    while true {
      let plan: (inotify: Int32, timeout: Duration?)? = state.withLock { state in
        if state.stopping { return nil }
        state.retiredInotify.removeAll()  // Closed here, never while `poll` waits on them.
        return (state.inotify?.descriptor ?? -1, state.nextDeadline().map { $0 - .now })
      }
      guard let plan else { break }
      let descriptors = [wakeUp.descriptorToPoll, plan.inotify]
      // Under a noisy neighbour: sleep, then take whatever queued meanwhile without waiting,
      // one context switch per pause instead of one per event (see `NoiseGate`).
      if pauseFirst { ContinuousClock.sleepThread(for: NoiseGate.pause) }
      let ready: [Bool]
      do { ready = try waitUntilReadable(descriptors, timeout: pauseFirst ? .zero : plan.timeout) } catch {
        state.withLock { $0.diagnostics("ccsync: file watcher stopped: \(error)") }
        break
      }
      if ready[0] { wakeUp.drain() }
      let deliveries = state.withLock { state in
        if ready[1], let inotify = state.inotify, inotify.descriptor == plan.inotify {
          let events = (try? inotify.readEvents()) ?? []
          state.handle(events)
        }
        state.fireTimers(now: .now)
        state.scheduleTimers(now: .now)  // A refresh may have made a registration polled.
        let wakes = state.wakes
        state.wakes = [:]
        return wakes.sorted { $0.key < $1.key }.compactMap { id, reason in
          state.registrations[id].map { Delivery(id: id, handler: $0.handler, reason: reason) }
        }
      }
      if !deliveries.isEmpty, deliver(deliveries, wakeUp) == .replaced { return .replaced }
      pauseFirst = ready[1] && !ready[0] && deliveries.isEmpty
        && noise.recordUnwatchedWakeUp(now: .now)
    }
    state.withLock { state in
      state.inotify = nil
      state.retiredInotify.removeAll()
    }
    return .done
  }

  /// One turn of handler calls (``LoopHandOver/runTurn(_:isCurrent:startStandby:)``):
  /// `deliveries`, or what a replaced leader left (`nil`). A registration cancelled since the
  /// batch was read is not called.
  private func deliver(
    _ deliveries: [Delivery<FileWatchReason>]?, _ wakeUp: WakeUpChannel
  ) -> LoopHandOver<FileWatchReason>.TurnEnd {
    handOver.runTurn(deliveries, isCurrent: { id in state.withLock { $0.registrations[id] != nil } }) { () throws(SystemError) in
      try handOver.startThread(name: threadName) { [self] in serve(wakeUp, leading: false) }
    }
  }
}
