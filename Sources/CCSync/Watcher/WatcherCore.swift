import CCSyncSystem

/// The state and the thread behind one `FileWatcher`.
///
/// `Sendable`: all mutable state is inside `state`, a `Protected`. The thread holds a strong
/// reference until it ends; `FileWatcher.deinit` ends it.
final class WatcherCore: Sendable {
  let state: Protected<WatcherState>
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
    guard state.thread == nil, !state.stopping else { return }
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
      state.thread = try BackgroundThread(name: threadName) { [self] in run(wakeUp) }
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

  /// Ends the thread; waits for it unless called from it (a handler dropping the last
  /// reference), in which case the thread ends by itself after the handler returns.
  func stop() {
    let thread = state.withLock { state in
      state.stopping = true
      state.wakeUp?.wakeUp()
      return state.thread
    }
    guard let thread else { return }
    if thread.isCurrent { thread.detach() } else { thread.join() }
  }

  /// The thread's loop: wait in `poll` on the wake-up pipe and the inotify descriptor until
  /// the next timer, handle what came, then call the handlers outside the lock.
  private func run(_ wakeUp: WakeUpChannel) {
    state.withLock { $0.threadID = BackgroundThread.currentThreadID() }
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
          state.registrations[id].map { (id, $0.handler, reason) }
        }
      }
      for (id, handler, reason) in deliveries {
        // A registration cancelled since the batch was read is not called.
        guard state.withLock({ $0.registrations[id] != nil }) else { continue }
        handler(reason)
      }
      pauseFirst = ready[1] && !ready[0] && deliveries.isEmpty
        && noise.recordUnwatchedWakeUp(now: .now)
    }
    state.withLock { state in
      state.inotify = nil
      state.retiredInotify.removeAll()
    }
  }
}
