import CCSyncEtcd
import CCSyncSystem
import Dispatch

/// One store's "may have changed" for an etcd key: a subscription to the process's one watch
/// of that key on that cluster (``SharedKeyWatch``), whose events carry the key's new value
/// to the handler. Cancelling it, or releasing it, ends the subscription; the last one to go
/// ends the stream and its thread.
///
/// `Sendable`: immutable but for the shared watch's state, which is behind a `Protected`.
final class EtcdWatch: StoreWatch {
  /// How long a stream may stay silent before the key is read to check it still delivers.
  static let progressBound: Duration = .seconds(5)
  /// The longest pause between attempts while no member answers.
  static let longestRetryPause: Duration = .seconds(2)

  /// The watch this subscribes to, and its number there; `nil` for ``inactive``.
  private let subscription: (watch: SharedKeyWatch, id: UInt64)?
  private let handler: (@Sendable (ChangeHint) -> Void)?
  private let cancelled = Protected(false)

  /// A watch that never calls its handler (a store whose configuration is invalid).
  static let inactive = EtcdWatch()

  private init() {
    subscription = nil
    handler = nil
  }

  /// Subscribes `handler` to the process's watch of `key` through `client`, started (when
  /// this is its first subscriber) from `startRevision` (1: from the current revision,
  /// learned by a first read).
  init(
    client: EtcdClient, key: [UInt8], name: String, startRevision: Int64, logger: DiagnosticLog,
    handler: @escaping @Sendable (ChangeHint) -> Void
  ) {
    self.handler = handler
    subscription = EtcdWatches.shared.subscribe(
      client: client, key: key, name: name, startRevision: startRevision, logger: logger, handler: handler)
  }

  deinit { cancel() }

  func cancel() {
    let first = cancelled.withLock { cancelled -> Bool in
      defer { cancelled = true }
      return !cancelled
    }
    guard first, let subscription else { return }
    EtcdWatches.shared.unsubscribe(subscription.id, from: subscription.watch)
  }

  func recheck(after delay: Duration) {
    guard let handler else { return }
    DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(delay.nanoseconds))) { [weak self] in
      guard let self, !self.cancelled.withLock({ $0 }) else { return }
      handler(ChangeHint(contentMayDiffer: true, isRequestedRecheck: true, description: "requested"))
    }
  }
}

/// The process's etcd watches: one stream (and thread) per client and key, shared by every
/// store of the process that watches that key, as one watcher thread serves a process's files.
/// (docs/ARCHITECTURE.md, "Beyond one machine: the etcd store", says why not one stream for
/// all keys.) `Sendable`: the table is behind a `Protected`.
final class EtcdWatches: Sendable {
  /// The table the process shares.
  static let shared = EtcdWatches()

  private struct Identity: Hashable {
    var client: ObjectIdentifier
    var key: [UInt8]
  }

  private let table = Protected<[Identity: SharedKeyWatch]>([:])

  /// Adds `handler` to the watch of `key` through `client`, starting one (from
  /// `startRevision`) when there is none. A subscriber that joins a running watch is handed
  /// the latest news it delivered, when that is at or after `startRevision`, so a change
  /// between its store's read and its joining is not missed.
  /// - Returns: the watch and the subscriber's number there.
  func subscribe(
    client: EtcdClient, key: [UInt8], name: String, startRevision: Int64, logger: DiagnosticLog,
    handler: @escaping @Sendable (ChangeHint) -> Void
  ) -> (watch: SharedKeyWatch, id: UInt64) {
    let identity = Identity(client: ObjectIdentifier(client), key: key)
    let (watch, id, catchUp, isNew) = table.withLock { table in
      let existing = table[identity]
      let watch = existing ?? SharedKeyWatch(client: client, key: key, name: name, from: startRevision, logger: logger)
      table[identity] = watch
      let (id, catchUp) = watch.add(handler, from: startRevision)
      return (watch, id, catchUp, existing == nil)
    }
    if isNew { watch.start(from: startRevision) }
    if let catchUp { handler(catchUp) }
    return (watch, id)
  }

  /// Removes subscriber `id` from `watch`; the last one's leaving stops the watch.
  func unsubscribe(_ id: UInt64, from watch: SharedKeyWatch) {
    let stops = table.withLock { table -> Bool in
      guard watch.remove(id) else { return false }
      let identity = Identity(client: ObjectIdentifier(watch.client), key: watch.key)
      if table[identity] === watch { table[identity] = nil }
      return true
    }
    if stops { watch.stop() }
  }
}

/// One key's watch on one cluster: a thread holding one watch stream, from the revision after
/// the last one read, whose news goes to every subscriber.
///
/// - The thread that reads an event calls the subscribers itself, and a subscriber's look
///   runs there when it comes early in the turn (``InlineReload``): no thread is woken
///   between the event and the observers. A standby thread takes the stream over when a turn
///   outlasts ``LoopHandOver/bound`` (a subscriber that blocks), with the calls not yet made,
///   so the other subscribers wait at most that long (``LoopHandOver``). With one subscriber
///   there is nobody else to wait, so its turns run without the standby's timer (two system
///   calls an event saved) until another subscribes.
/// - After a disconnect (a member stopped, the stream broke) it watches again from the
///   revision after the last one it delivered, on whichever member answers, so no change is
///   missed; while no member answers it retries with backoff and says so once in the log.
/// - After a compaction (the next revision is gone) it reads the key again, hands that on,
///   and watches from the revision after that read.
/// - A stream that stops answering is replaced: when nothing arrives for
///   ``EtcdWatch/progressBound``, the key is read; a revision the stream has not delivered
///   means it is stuck, and the change is handed on from the read.
///
/// `Sendable`: its state is behind a `Protected`; the thread owns the stream.
final class SharedKeyWatch: Sendable {
  private struct State {
    var subscribers: [(id: UInt64, handler: @Sendable (ChangeHint) -> Void)] = []
    var nextID: UInt64 = 1
    /// The latest news handed on and the revision it is news of, for late subscribers.
    var latest: (hint: ChangeHint, revision: Int64)?
    /// The first revision the watch reports, when its first subscriber gave it.
    var from: Int64?
    var cancelled = false
    /// Stops the stream being read, from another thread.
    var canceller: EtcdWatchCanceller?
  }

  let client: EtcdClient
  let key: [UInt8]
  private let name: String
  private let logger: DiagnosticLog
  private let state = Protected(State())
  /// Wakes a retry pause early when the watch is stopped.
  private let pause = ConditionLock()
  /// The hand-over of the stream between the watch's threads. Not serializing: a subscriber
  /// queues each hint itself, and one still running on a replaced leader is called at once.
  /// Others wait on the stream only when there are two subscribers or more (``add(_:from:)``).
  private let handOver = LoopHandOver<ChangeHint>(serializesCalls: false)

  /// A watch of `key` that will report from `startRevision` (1 or less: from a first read).
  fileprivate init(client: EtcdClient, key: [UInt8], name: String, from startRevision: Int64, logger: DiagnosticLog) {
    self.client = client
    self.key = key
    self.name = name
    self.logger = logger
    if startRevision > 1 { state.withLock { $0.from = startRevision } }
  }

  /// Starts the thread, watching from `startRevision` (1 or less: learn it with a read).
  fileprivate func start(from startRevision: Int64) {
    // The threads hold the watch weakly between reads, so that a watch stopped and released
    // ends its threads at the next look.
    let current: @Sendable () -> SharedKeyWatch? = { [weak self] in self }
    let loop = WatchLoop(client: client, key: key, name: name, logger: logger, handOver: handOver, watch: current)
    do {
      try handOver.startThread(name: WatchLoop.threadName) {
        loop.serve(leading: true, from: startRevision > 1 ? startRevision : nil)
      }
    } catch {
      logger.log(.error, "'\(name)': cannot start the thread that watches the key; changes are seen only on load")
    }
  }

  /// Adds a subscriber that knows the key up to `startRevision - 1`; returns its number and
  /// what it may have missed: the latest news handed on, when that is of a revision at or
  /// after `startRevision`; a hint to look, when the watch reports only from a later
  /// revision; else nothing (what it has not seen is still to come).
  fileprivate func add(_ handler: @escaping @Sendable (ChangeHint) -> Void, from startRevision: Int64) -> (UInt64, ChangeHint?) {
    state.withLock { state in
      let id = state.nextID
      state.nextID += 1
      state.subscribers.append((id, handler))
      handOver.othersWait = state.subscribers.count > 1
      if let latest = state.latest, latest.revision >= startRevision { return (id, latest.hint) }
      if let from = state.from, from > startRevision {
        return (id, ChangeHint(contentMayDiffer: true, isRequestedRecheck: false, description: "etcd: joined a watch from revision \(from)"))
      }
      return (id, nil)
    }
  }

  /// Removes subscriber `id`; `true` when none is left, and the watch is then cancelled.
  fileprivate func remove(_ id: UInt64) -> Bool {
    state.withLock { state in
      state.subscribers.removeAll { $0.id == id }
      handOver.othersWait = state.subscribers.count > 1
      guard state.subscribers.isEmpty, !state.cancelled else { return false }
      state.cancelled = true
      return true
    }
  }

  /// Stops the stream and any retry pause; the threads end (a leader replaced while in a
  /// subscriber's call once that returns).
  fileprivate func stop() {
    state.withLock { $0.canceller }?.cancel()
    pause.withLock { pause.broadcast() }
    handOver.stop(waiting: false)
  }

  fileprivate var isCancelled: Bool { state.withLock { $0.cancelled } }

  /// Records the canceller of a new stream; `false` when the watch was stopped meanwhile.
  fileprivate func adopt(_ canceller: EtcdWatchCanceller) -> Bool {
    state.withLock { state in
      guard !state.cancelled else { return false }
      state.canceller = canceller
      return true
    }
  }

  /// Keeps `hint`, news of `revision`, for late subscribers; returns its calls to every
  /// subscriber.
  fileprivate func news(_ hint: ChangeHint, revision: Int64) -> [Delivery<ChangeHint>] {
    state.withLock { state in
      guard !state.cancelled else { return [] }
      state.latest = (hint, revision)
      return state.subscribers.map { Delivery(id: $0.id, handler: $0.handler, reason: hint) }
    }
  }

  /// The calls that tell every subscriber the cluster refused the watch: `refusal`, which
  /// names the key. Not kept for late subscribers: it is not news of a revision.
  fileprivate func news(refusal: StoreError) -> [Delivery<ChangeHint>] {
    let hint = ChangeHint(
      contentMayDiffer: true, isRequestedRecheck: false, description: "etcd: the watch was refused: \(refusal)", refusal: refusal)
    return state.withLock { state in
      state.cancelled ? [] : state.subscribers.map { Delivery(id: $0.id, handler: $0.handler, reason: hint) }
    }
  }

  /// Whether subscriber `id` is still subscribed (a call to one that left is not made).
  fileprivate func isSubscribed(_ id: UInt64) -> Bool {
    state.withLock { state in !state.cancelled && state.subscribers.contains { $0.id == id } }
  }

  /// Waits `duration`, or less when the watch is stopped.
  fileprivate func pause(for duration: Duration) {
    let deadline = ContinuousClock.now + duration
    pause.withLock {
      while !isCancelled && ContinuousClock.now < deadline { pause.wait(until: deadline) }
    }
  }
}

/// The watch threads' loop, apart from the watch object so that releasing the watch ends it.
private struct WatchLoop: Sendable {
  static let threadName = "ccsync-etcd"

  /// Where the loop stands, for a thread that takes it over.
  struct Position {
    /// The stream being read; `nil`: open one.
    var stream: EtcdWatchStream?
    /// The first revision not handed on yet; `nil`: learn it with a read.
    var next: Int64?
    /// Whether the key exists, as last learned (`nil`: not known): a silent stream is
    /// checked against it.
    var exists: Bool?
  }

  /// How the reading of one stream ended, when it did not throw.
  private enum StreamEnd {
    /// Stalled (replace it), or the watch stopped.
    case stalled
    /// Taken over by the standby during a turn of subscriber calls, with the stream or
    /// (`false`: it stalled) without.
    case takenOver(withStream: Bool)
  }

  let client: EtcdClient
  let key: [UInt8]
  let name: String
  let logger: DiagnosticLog
  let handOver: LoopHandOver<ChangeHint>
  /// The watch, while it is not released.
  let currentWatch: @Sendable () -> SharedKeyWatch?
  /// Where the leader stood when it began its latest turn.
  private let handedPosition = Protected(Position())

  init(
    client: EtcdClient, key: [UInt8], name: String, logger: DiagnosticLog, handOver: LoopHandOver<ChangeHint>,
    watch: @escaping @Sendable () -> SharedKeyWatch?
  ) {
    self.client = client
    self.key = key
    self.name = name
    self.logger = logger
    self.handOver = handOver
    currentWatch = watch
  }

  /// One thread of the watch: leads the loop from `start` (the first revision to report;
  /// `nil` learns it with a read) when `leading`, else stands by; a leader whose loop was taken
  /// over stands by once its subscriber call returns, or ends.
  func serve(leading: Bool, from start: Int64?) {
    if !leading {
      guard handOver.standBy(isNew: true) else { return }
    }
    var position: Position? = leading ? Position(stream: nil, next: start, exists: nil) : nil
    while run(from: position) == .replaced, handOver.standBy(isNew: false) {
      position = nil
    }
  }

  /// Leads the loop until the watch is cancelled or released (`.done`) or the loop is taken
  /// over (`.replaced`). `position`: where to start; `nil`: a thread that has just taken the
  /// loop over, which first makes the calls the old leader left and goes on from where it stood.
  private func run(from start: Position?) -> LoopHandOver<ChangeHint>.TurnEnd {
    var position: Position
    if let start {
      position = start
    } else {
      if turn(nil) == .replaced { return .replaced }
      position = handedPosition.withLock { $0 }
    }
    var retryPause: Duration = .milliseconds(100)
    // A stream that ends is opened again at once, on another member if need be; only a
    // failure of that too (no member serves a watch) is an outage worth a line.
    var failures = 0
    // Refusals since the watch last served: the first is told to the subscribers, the
    // second logged (a subscriber that ends on a refusal has ended by then).
    var refusals = 0
    while let watch = currentWatch(), !watch.isCancelled {
      do throws(EtcdError) {
        if position.next == nil {
          // Learn where to start, and hand on what the key holds now (a change between the
          // store's first read and this one is not missed).
          let (keyValue, revision) = try client.get(key)
          position.next = revision + 1
          position.exists = keyValue != nil
          let news = watch.news(hint(for: keyValue, at: revision, description: "etcd: watching from revision \(revision + 1)"), revision: revision)
          if turn(news, at: position) == .replaced { return .replaced }
        }
        let stream: EtcdWatchStream
        if let handed = position.stream {
          stream = handed  // taken over with the loop
          position.stream = nil
        } else {
          stream = try client.watch(.key(key), startRevision: position.next, progressNotify: true)
        }
        var handedOver = false
        defer { if !handedOver { stream.close() } }
        guard watch.adopt(stream.canceller) else { return .done }
        if failures > 1 { logger.log(.warning, "'\(name)': watching again, on \(stream.endpoint)") }
        failures = 0
        refusals = 0
        retryPause = .milliseconds(100)
        if case .takenOver(let withStream) = try follow(stream, position: &position) {
          handedOver = withStream
          return .replaced
        }
      } catch {
        if watch.isCancelled { return .done }
        if case .compacted = error {
          position.next = nil  // read again, and watch from there
          continue
        }
        failures += 1
        // Refused with a token just asked for (the client authenticates again once on a
        // refusal: a restarted member forgets tokens): tell the subscribers at once, and
        // keep trying, as for an outage; permission may be granted again.
        let storeError = StoreError(error, name: name)
        if case .accessDenied = storeError {
          refusals += 1
          if refusals == 1, turn(watch.news(refusal: storeError), at: position) == .replaced { return .replaced }
          if refusals == 2 { logger.log(.warning, "cannot watch '\(name)' (\(error)); retrying") }
          watch.pause(for: retryPause)
          retryPause = min(retryPause * 2, EtcdWatch.longestRetryPause)
          continue
        }
        if failures == 1 { continue }
        if failures == 2 { logger.log(.warning, "cannot watch '\(name)' (\(error)); retrying") }
        watch.pause(for: retryPause)
        retryPause = min(retryPause * 2, EtcdWatch.longestRetryPause)
      }
    }
    return .done
  }

  /// Reads `stream` until it ends or stalls, handing on each change and advancing
  /// `position`. Returns when a stalled stream is to be replaced or the loop was taken over
  /// with the stream; throws how it ended.
  private func follow(_ stream: EtcdWatchStream, position: inout Position) throws(EtcdError) -> StreamEnd {
    while let watch = currentWatch(), !watch.isCancelled {
      guard let response = try stream.next(timeout: EtcdWatch.progressBound) else {
        // Silent for a while: read the key. A version the stream has not delivered, or the
        // key gone while the stream last said it existed (or has said nothing yet: the first
        // change since the start may be the delete), means it stalled: the read hands the
        // change on, and the stream is replaced.
        let (keyValue, revision) = try client.get(key)
        let missed = keyValue.map { $0.modRevision >= (position.next ?? 0) } ?? (position.exists != false)
        position.exists = keyValue != nil
        if missed {
          let what = keyValue.map { "change at revision \($0.modRevision)" } ?? "delete"
          position.next = revision + 1
          let news = watch.news(hint(for: keyValue, at: revision, description: "etcd: \(what) read after the stream fell silent"), revision: revision)
          return turn(news, at: position) == .replaced ? .takenOver(withStream: false) : .stalled
        }
        continue
      }
      guard let last = response.events.last else {
        position.next = max(position.next ?? 0, response.revision + 1)  // progress: nothing missed up to here
        continue
      }
      position.next = max(position.next ?? 0, last.keyValue.modRevision + 1)
      position.exists = last.kind != .delete
      let current: ChangeHint.CurrentVersion =
        last.kind == .delete ? .missing(asOf: last.keyValue.modRevision) : .version(StoredVersion(last.keyValue))
      let news = watch.news(
        ChangeHint(
          contentMayDiffer: true, isRequestedRecheck: false,
          cause: .etcdEvent(isDelete: last.kind == .delete, revision: last.keyValue.modRevision), current: current),
        revision: last.keyValue.modRevision)
      var handed = position
      handed.stream = stream
      if turn(news, at: handed) == .replaced { return .takenOver(withStream: true) }
    }
    return .stalled
  }

  /// One turn of calls to the subscribers (``LoopHandOver/runTurn(_:isCurrent:startStandby:)``):
  /// `news`, with `position` recorded for a thread that takes the loop over during it; or
  /// (`nil`) what a replaced leader left.
  private func turn(_ news: [Delivery<ChangeHint>]?, at position: Position = Position()) -> LoopHandOver<ChangeHint>.TurnEnd {
    if news != nil { handedPosition.withLock { $0 = position } }
    return handOver.runTurn(news, isCurrent: { id in currentWatch()?.isSubscribed(id) ?? false }) { () throws(SystemError) in
      try handOver.startThread(name: Self.threadName) { serve(leading: false, from: nil) }
    }
  }

  /// A hint carrying what a read at `revision` found.
  private func hint(for keyValue: EtcdKeyValue?, at revision: Int64, description: String) -> ChangeHint {
    ChangeHint(
      contentMayDiffer: true, isRequestedRecheck: false, description: description,
      current: keyValue.map { .version(StoredVersion($0)) } ?? .missing(asOf: revision))
  }
}
