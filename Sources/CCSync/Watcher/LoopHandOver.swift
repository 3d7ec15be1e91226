import CCSyncSystem

/// One woken watch's handler call, in a turn's list.
struct Delivery {
  let id: RegistrationID
  let handler: @Sendable (FileWatchReason) -> Void
  let reason: FileWatchReason
}

/// Who runs a watcher's loop: a leader/follower hand-over between the watcher's threads.
///
/// The leader waits in `poll`, reads the events and calls the woken watches' handlers itself,
/// and a handler may do its work there (a storage's reload, see ``InlineReload``): no other
/// thread is woken between the event and the work. While the leader is away from its loop
/// (a turn of handler calls), a standby thread waits on a timer armed for ``bound``; a timer
/// wakes nobody unless it expires. When a turn outlasts the bound (a handler that blocks), the
/// standby takes the loop over, with the turn's handler calls not yet made, and the old leader
/// goes on with its handler alone; once that returns it becomes the standby, or ends when
/// there is one. So a blocking handler holds up other files' events for at most ``bound``,
/// and the watcher has two threads (the leader and the standby) plus one per handler that is
/// blocked now.
///
/// One watch's handler is never called on two threads at once: a wake-up of a watch whose
/// handler still runs on a replaced leader is held, merged, and made by that thread when the
/// handler returns.
///
/// `@unchecked Sendable`: every variable is guarded by `condition`.
final class LoopHandOver: @unchecked Sendable {
  /// How long a leader may be away from its loop before the standby takes it over: longer
  /// than a reload of a small document takes (well under a millisecond), short enough that a
  /// blocked handler delays other files' events by little. A hand-over costs a thread woken.
  static let bound: Duration = .milliseconds(2)

  /// How long into a turn a handler may still run its reload inline: past it, reloads go to
  /// the process's reload threads, so a burst (a thousand storages' echoes after a flush of
  /// them all) neither keeps the loop away nor waits on one thread.
  static let inlineBudget: Duration = .milliseconds(1)

  enum TurnEnd { case done, replaced }

  /// `nil` when no timer could be made: then there is no standby, and handlers do no inline
  /// work.
  private let timer: TimerDescriptor?
  private let condition = ConditionLock()
  /// The leader's term: a take-over starts the next one, and the old leader, seeing it, knows.
  private var term: UInt64 = 0
  /// When the leader left its loop for a turn of handler calls; `nil` while it is in the loop.
  private var awaySince: ContinuousClock.Instant?
  /// The turn's handler calls, the next from `nextDelivery` on.
  private var queue: [Delivery] = []
  private var nextDelivery = 0
  /// The watches whose handler is being called now.
  private var running: Set<RegistrationID> = []
  /// Wake-ups of running watches, merged, for the thread running each to make.
  private var held: [RegistrationID: FileWatchReason] = [:]
  /// Threads standing by, or started to: at most one.
  private var standbys = 0
  private var liveThreads = 0
  private var liveIdentities: Set<UInt> = []
  private var stopping = false
  private var takeOvers = 0

  init() {
    timer = try? TimerDescriptor()
  }

  /// Whether a standby can take the loop over, so that handlers may work inline.
  var canHandOver: Bool { timer != nil }

  /// How many times a standby took the loop over (tests check that a blocked handler made one).
  var takeOverCount: Int { condition.withLock { takeOvers } }

  /// The threads the watcher has now: leader, standby and replaced leaders still in a handler.
  var threadCount: Int { condition.withLock { liveThreads } }

  /// Starts a detached thread of the watcher, counted until it ends.
  func startThread(name: String, _ body: @escaping @Sendable () -> Void) throws(SystemError) {
    condition.withLock { liveThreads += 1 }
    do {
      try BackgroundThread(name: name) { [self] in
        condition.withLock { _ = liveIdentities.insert(ThreadIdentity.current) }
        body()
        condition.withLock {
          liveIdentities.remove(ThreadIdentity.current)
          liveThreads -= 1
          condition.broadcast()
        }
      }.detach()
    } catch {
      condition.withLock { liveThreads -= 1 }
      throw error
    }
  }

  /// Begins a turn of handler calls: `deliveries`, or, for a thread that has just taken the
  /// loop over, what the old leader left. Arms the standby's timer.
  /// - Returns: the term to pass to the other calls, and whether the caller must start a
  ///   standby thread (then it calls ``standbyFailed()`` if it cannot).
  func beginTurn(_ deliveries: [Delivery]?) -> (term: UInt64, startStandby: Bool) {
    condition.withLock {
      if let deliveries {
        queue = deliveries
        nextDelivery = 0
      }
      guard let timer, nextDelivery < queue.count, !stopping else { return (term, false) }
      awaySince = .now
      timer.arm(after: Self.bound)
      let startStandby = standbys == 0
      if startStandby { standbys = 1 }
      return (term, startStandby)
    }
  }

  /// A standby thread could not be started.
  func standbyFailed() {
    condition.withLock { standbys -= 1 }
  }

  /// The turn's next handler call, marked running; `nil` when the turn is over or the loop
  /// was taken over. Wake-ups of a watch running on another thread are held for it.
  func next(in turn: UInt64) -> Delivery? {
    condition.withLock {
      while turn == term, nextDelivery < queue.count {
        let delivery = queue[nextDelivery]
        nextDelivery += 1
        if running.contains(delivery.id) {
          held[delivery.id] = held[delivery.id].map { $0.merged(with: delivery.reason) } ?? delivery.reason
          continue
        }
        running.insert(delivery.id)
        return delivery
      }
      return nil
    }
  }

  /// A handler call of `id` returned: the wake-up held for it meanwhile, which the caller
  /// makes next (the watch stays running), or `nil` (it is not running any more).
  func finished(_ id: RegistrationID) -> FileWatchReason? {
    condition.withLock {
      if let reason = held.removeValue(forKey: id) { return reason }
      running.remove(id)
      return nil
    }
  }

  /// Ends the turn: `.done` for a leader still in office (back to its loop), `.replaced` for
  /// one whose loop was taken over.
  func endTurn(_ turn: UInt64) -> TurnEnd {
    condition.withLock {
      guard turn == term else { return .replaced }
      if awaySince != nil {
        awaySince = nil
        if !stopping { timer?.disarm() }
      }
      queue = []
      nextDelivery = 0
      return .done
    }
  }

  /// Called by a replaced leader once its handler returned, and by a new standby thread:
  /// stands by until the leader outstays ``bound`` (`true`: the caller now leads, and begins
  /// with `beginTurn(nil)`), or returns `false` at once when there is a standby already (a
  /// replaced leader then ends), or when the watcher stops.
  func standBy(isNew: Bool) -> Bool {
    guard let timer else { return false }
    let stands = condition.withLock { () -> Bool in
      if isNew { return !stopping }
      guard standbys == 0, !stopping else { return false }
      standbys = 1
      return true
    }
    guard stands else {
      if isNew { condition.withLock { standbys -= 1 } }
      return false
    }
    while true {
      _ = try? waitUntilReadable([timer.descriptor], timeout: nil)
      timer.drain()
      let outcome = condition.withLock { () -> Bool? in
        if stopping {
          standbys -= 1
          return false
        }
        guard let since = awaySince else { return nil }
        let left = since + Self.bound - .now
        if left > .zero {
          timer.arm(after: left)  // an early or stale expiry
          return nil
        }
        term += 1
        takeOvers += 1
        awaySince = nil
        standbys -= 1
        return true
      }
      if let outcome { return outcome }
    }
  }

  /// Stops the hand-over: the standby ends; a leader that was replaced ends after its handler.
  /// Waits for every thread of the watcher to end, unless called on one of them (a handler
  /// releasing the watcher), which then end by themselves.
  func stop() {
    condition.withLock {
      stopping = true
      timer?.arm(after: .zero)
      guard !liveIdentities.contains(ThreadIdentity.current) else { return }
      while liveThreads > 0 { condition.wait() }
    }
  }
}
