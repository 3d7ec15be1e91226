import CCSyncSystem

/// What a loop hands a handler: wake-ups of one handler that wait while it runs are merged.
protocol MergeableWakeUp: Sendable {
  /// One wake-up that asks for everything either asked for.
  func merged(with other: Self) -> Self
}

extension FileWatchReason: MergeableWakeUp {}
extension ChangeHint: MergeableWakeUp {}

/// One woken handler's call, in a turn's list.
struct Delivery<Reason: MergeableWakeUp> {
  /// The registration (a file watch) or subscriber (an etcd key's store) called.
  let id: UInt64
  let handler: @Sendable (Reason) -> Void
  let reason: Reason
}

/// Who runs a watcher's loop: a leader/follower hand-over between the watcher's threads. The
/// file watcher's loop waits in `poll` on inotify (`WatcherCore`); an etcd key's loop reads
/// its watch stream (`SharedKeyWatch`).
///
/// The leader waits for events (`poll`, the stream), reads them and calls the woken handlers itself,
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
/// A loop whose events have one handler only (an etcd key with one subscriber) can say so
/// (``othersWait`` false): then nobody but that handler waits on the loop, its turns run
/// without the timer, and a turn that blocks holds up only that handler's own later calls,
/// which its queue would hold anyway. The timer is armed the moment another joins, mid-turn
/// too, so the bound holds for everyone else.
///
/// With `serializesCalls` (the file watcher), one watch's handler is never called on two
/// threads at once: a wake-up of a watch whose handler still runs on a replaced leader is
/// held, merged, and made by that thread when the handler returns. Without (an etcd key's
/// subscribers, whose handlers queue each hint themselves, in the order called, and may be
/// called from any thread), the new leader calls it at once, so no hint is merged away.
///
/// `@unchecked Sendable`: every variable is guarded by `condition`.
final class LoopHandOver<Reason: MergeableWakeUp>: @unchecked Sendable {
  /// How long a leader may be away from its loop before the standby takes it over: longer
  /// than a reload of a small document takes (well under a millisecond), short enough that a
  /// blocked handler delays other files' events by little. A hand-over costs a thread woken.
  static var bound: Duration { .milliseconds(2) }

  /// How long into a turn a handler may still run its reload inline: past it, reloads go to
  /// the process's reload threads, so a burst (a thousand storages' echoes after a flush of
  /// them all) neither keeps the loop away nor waits on one thread.
  static var inlineBudget: Duration { .milliseconds(1) }

  enum TurnEnd { case done, replaced }

  /// `nil` when no timer could be made: then there is no standby, and handlers do no inline
  /// work.
  private let timer: TimerDescriptor?
  private let condition = ConditionLock()
  /// The leader's term: a take-over starts the next one, and the old leader, seeing it, knows.
  private var term: UInt64 = 0
  /// When the leader left its loop for a turn of handler calls; `nil` while it is in the loop.
  private var awaySince: ContinuousClock.Instant?
  /// Whether the timer is armed for the turn under way.
  private var timerArmed = false
  /// Whether anyone but the turn's handlers waits on the loop (``othersWait``).
  private var othersWaitOnLoop = true
  /// The turn's handler calls, the next from `nextDelivery` on.
  private var queue: [Delivery<Reason>] = []
  private var nextDelivery = 0
  /// The watches whose handler is being called now.
  private var running: Set<UInt64> = []
  /// Wake-ups of running watches, merged, for the thread running each to make.
  private var held: [UInt64: Reason] = [:]
  /// Threads standing by, or started to: at most one.
  private var standbys = 0
  private var liveThreads = 0
  private var liveIdentities: Set<UInt> = []
  private var stopping = false
  private var takeOvers = 0

  /// Whether a handler still running on a replaced leader has its next calls held for it.
  private let serializesCalls: Bool

  /// A hand-over; see the type's description for `serializesCalls`.
  init(serializesCalls: Bool) {
    self.serializesCalls = serializesCalls
    timer = try? TimerDescriptor()
  }

  /// Whether a standby can take the loop over, so that handlers may work inline.
  var canHandOver: Bool { timer != nil }

  /// Whether anything but the handlers of a turn waits on the loop while it runs: other
  /// files' events on the file watcher's descriptor, other subscribers of an etcd key. When
  /// false (one subscriber), turns run without the standby's timer: a blocked turn holds up
  /// nobody else. Set true, it arms the timer for a turn under way, from when that began.
  var othersWait: Bool {
    get { condition.withLock { othersWaitOnLoop } }
    set {
      condition.withLock {
        othersWaitOnLoop = newValue
        guard newValue, let timer, let since = awaySince, !timerArmed, !stopping else { return }
        timer.arm(after: since + Self.bound - .now)
        timerArmed = true
      }
    }
  }

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
  /// loop over, what the old leader left. Arms the standby's timer, unless nobody else waits
  /// on the loop (``othersWait``).
  /// - Returns: the term to pass to the other calls, and whether the caller must start a
  ///   standby thread (then it calls ``standbyFailed()`` if it cannot).
  private func beginTurn(_ deliveries: [Delivery<Reason>]?) -> (term: UInt64, startStandby: Bool) {
    condition.withLock {
      if let deliveries {
        queue = deliveries
        nextDelivery = 0
      }
      guard let timer, nextDelivery < queue.count, !stopping else { return (term, false) }
      awaySince = .now
      if othersWaitOnLoop || deliveries == nil {
        timer.arm(after: Self.bound)
        timerArmed = true
      }
      let startStandby = standbys == 0
      if startStandby { standbys = 1 }
      return (term, startStandby)
    }
  }

  /// One turn of handler calls: `deliveries`, or, for a thread that has just taken the loop
  /// over, what the old leader left (`nil`). The handlers called within ``inlineBudget`` of
  /// the turn's start may do their reload inline (``InlineReload``); a handler whose
  /// registration `isCurrent` no longer holds (cancelled since the batch was read) is not called.
  /// - Parameter startStandby: starts a thread that stands by (``standBy(isNew:)`` with `true`),
  ///   when there is none; throws when it cannot.
  /// - Returns: `.done` for a leader still in office, `.replaced` for one whose loop was taken over.
  func runTurn(
    _ deliveries: [Delivery<Reason>]?, isCurrent: (UInt64) -> Bool, startStandby: () throws(SystemError) -> Void
  ) -> TurnEnd {
    let turnStart = ContinuousClock.now
    let (turn, mustStartStandby) = beginTurn(deliveries)
    if mustStartStandby {
      do { try startStandby() } catch { standbyFailed() }
    }
    let inlineUntil = canHandOver && deliveries != nil ? turnStart + Self.inlineBudget : turnStart
    while let delivery = next(in: turn) {
      var reason: Reason? = delivery.reason
      var inline = ContinuousClock.now < inlineUntil
      while let current = reason {
        if isCurrent(delivery.id) {
          InlineReload.permitting(inline) { delivery.handler(current) }
        }
        reason = finished(delivery.id)
        inline = false
      }
    }
    return endTurn(turn)
  }

  /// A standby thread could not be started.
  private func standbyFailed() {
    condition.withLock { standbys -= 1 }
  }

  /// The turn's next handler call, marked running; `nil` when the turn is over or the loop
  /// was taken over. Wake-ups of a watch running on another thread are held for it.
  private func next(in turn: UInt64) -> Delivery<Reason>? {
    condition.withLock {
      while turn == term, nextDelivery < queue.count {
        let delivery = queue[nextDelivery]
        nextDelivery += 1
        guard serializesCalls else { return delivery }
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
  private func finished(_ id: UInt64) -> Reason? {
    condition.withLock {
      guard serializesCalls else { return nil }
      if let reason = held.removeValue(forKey: id) { return reason }
      running.remove(id)
      return nil
    }
  }

  /// Ends the turn: `.done` for a leader still in office (back to its loop), `.replaced` for
  /// one whose loop was taken over.
  private func endTurn(_ turn: UInt64) -> TurnEnd {
    condition.withLock {
      guard turn == term else { return .replaced }
      if awaySince != nil {
        awaySince = nil
        if timerArmed && !stopping { timer?.disarm() }
        timerArmed = false
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
        guard let since = awaySince, timerArmed else { return nil }
        let left = since + Self.bound - .now
        if left > .zero {
          timer.arm(after: left)  // an early or stale expiry
          return nil
        }
        term += 1
        takeOvers += 1
        awaySince = nil
        timerArmed = false
        standbys -= 1
        return true
      }
      if let outcome { return outcome }
    }
  }

  /// Stops the hand-over: the standby ends; a leader that was replaced ends after its handler.
  /// Waits for every thread of the watcher to end when `waiting`, unless called on one of them
  /// (a handler releasing the watcher), which then end by themselves.
  func stop(waiting: Bool = true) {
    condition.withLock {
      stopping = true
      timer?.arm(after: .zero)
      guard waiting, !liveIdentities.contains(ThreadIdentity.current) else { return }
      while liveThreads > 0 { condition.wait() }
    }
  }
}
