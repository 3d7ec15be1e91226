import CCSyncEtcd
import CCSyncSystem
import Dispatch

/// "May have changed" for one etcd key: a thread holding one watch stream, from the revision
/// after the last one the store read, whose events carry the key's new value to the handler.
///
/// - After a disconnect (a member stopped, the stream broke) it watches again from the
///   revision after the last one it delivered, on whichever member answers, so no change is
///   missed; while no member answers it retries with backoff and says so once in the log.
/// - After a compaction (the next revision is gone) it tells the handler to read the key
///   again, and watches from the revision after that read.
/// - A stream that stops answering is replaced: when nothing arrives for
///   ``progressBound``, the key is read; a revision the stream has not delivered means it
///   is stuck, and the change is handed on from the read.
///
/// `Sendable`: its state is behind a `Protected`; the thread owns the stream.
final class EtcdWatch: StoreWatch {
  /// How long a stream may stay silent before the key is read to check it still delivers.
  static let progressBound: Duration = .seconds(5)
  /// The longest pause between attempts while no member answers.
  static let longestRetryPause: Duration = .seconds(2)

  private struct State {
    var cancelled = false
    /// Stops the stream being read, from another thread.
    var canceller: EtcdWatchCanceller?
  }

  private let state = Protected(State())
  /// Wakes a retry pause early when the watch is cancelled.
  private let pause = ConditionLock()
  private let handler: (@Sendable (ChangeHint) -> Void)?

  /// A watch that never calls its handler (a store whose configuration is invalid).
  static let inactive = EtcdWatch()

  private init() {
    handler = nil
  }

  /// Starts watching `key` from `startRevision` (1: from the current revision, learned by a
  /// first read).
  init(
    client: EtcdClient, key: [UInt8], name: String, startRevision: Int64, logger: DiagnosticLog,
    handler: @escaping @Sendable (ChangeHint) -> Void
  ) {
    self.handler = handler
    let loop = WatchLoop(client: client, key: key, name: name, logger: logger)
    // The thread holds the watch weakly between reads, so releasing it ends the thread.
    let current: @Sendable () -> EtcdWatch? = { [weak self] in self }
    let thread = try? BackgroundThread(name: "ccsync-etcd") {
      loop.run(from: startRevision > 1 ? startRevision : nil, watch: current)
    }
    thread?.detach()
    if thread == nil { logger.log(.error, "'\(name)': cannot start the thread that watches the key; changes are seen only on load") }
  }

  deinit { cancel() }

  func cancel() {
    let canceller = state.withLock { state -> EtcdWatchCanceller? in
      state.cancelled = true
      return state.canceller
    }
    canceller?.cancel()
    pause.withLock { pause.broadcast() }
  }

  func recheck(after delay: Duration) {
    guard let handler else { return }
    let (seconds, attoseconds) = delay.components
    let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
    DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { [weak self] in
      guard let self, !self.isCancelled else { return }
      handler(ChangeHint(contentMayDiffer: true, isRequestedRecheck: true, description: "requested"))
    }
  }

  fileprivate var isCancelled: Bool { state.withLock(\.cancelled) }

  /// Records the canceller of a new stream; `false` when the watch was cancelled meanwhile.
  fileprivate func adopt(_ canceller: EtcdWatchCanceller) -> Bool {
    state.withLock { state in
      guard !state.cancelled else { return false }
      state.canceller = canceller
      return true
    }
  }

  fileprivate func tell(_ hint: ChangeHint) {
    guard !isCancelled else { return }
    handler?(hint)
  }

  /// Waits `duration`, or less when the watch is cancelled.
  fileprivate func pause(for duration: Duration) {
    let deadline = FileSystem.monotonicNanoseconds() + Int64(duration.components.seconds) * 1_000_000_000
      + duration.components.attoseconds / 1_000_000_000
    pause.withLock {
      while !isCancelled && FileSystem.monotonicNanoseconds() < deadline { pause.wait(until: deadline) }
    }
  }
}

/// The watch thread's loop, apart from the watch object so that releasing the watch ends it.
private struct WatchLoop: Sendable {
  let client: EtcdClient
  let key: [UInt8]
  let name: String
  let logger: DiagnosticLog

  /// Runs until the watch `current` gives is cancelled or released. `start`: the first
  /// revision to report; `nil` learns it with a read.
  func run(from start: Int64?, watch current: @Sendable () -> EtcdWatch?) {
    var next = start
    var retryPause: Duration = .milliseconds(100)
    // A stream that ends is opened again at once, on another member if need be; only a
    // failure of that too (no member serves a watch) is an outage worth a line.
    var failures = 0
    while let watch = current(), !watch.isCancelled {
      do throws(EtcdError) {
        if next == nil {
          // Learn where to start, and hand on what the key holds now (a change between the
          // store's first read and this one is not missed).
          let (keyValue, revision) = try client.get(key)
          watch.tell(hint(for: keyValue, description: "etcd: watching from revision \(revision + 1)"))
          next = revision + 1
        }
        let stream = try client.watch(.key(key), startRevision: next, progressNotify: true)
        defer { stream.close() }
        guard watch.adopt(stream.canceller) else { return }
        if failures > 1 { logger.log(.warning, "'\(name)': watching again, on \(stream.endpoint)") }
        failures = 0
        retryPause = .milliseconds(100)
        try follow(stream, next: &next, watch: current)
      } catch {
        if watch.isCancelled { return }
        if case .compacted = error {
          next = nil  // read again, and watch from there
          continue
        }
        failures += 1
        if failures == 1 { continue }
        if failures == 2 { logger.log(.warning, "cannot watch '\(name)' (\(error)); retrying") }
        watch.pause(for: retryPause)
        retryPause = min(retryPause * 2, EtcdWatch.longestRetryPause)
      }
    }
  }

  /// Reads `stream` until it ends or stalls, handing on each change and advancing `next`.
  /// Returns when a stalled stream is to be replaced; throws how it ended.
  private func follow(_ stream: EtcdWatchStream, next: inout Int64?, watch current: @Sendable () -> EtcdWatch?) throws(EtcdError) {
    while let watch = current(), !watch.isCancelled {
      guard let response = try stream.next(timeout: EtcdWatch.progressBound) else {
        // Silent for a while: read the key; a change the stream has not delivered means it
        // stalled, and the read hands it on.
        let (keyValue, revision) = try client.get(key)
        if let keyValue, keyValue.modRevision >= (next ?? 0) {
          watch.tell(hint(for: keyValue, description: "etcd: change at revision \(keyValue.modRevision) read after the stream fell silent"))
          next = revision + 1
          return
        }
        continue
      }
      guard let last = response.events.last else {
        next = max(next ?? 0, response.revision + 1)  // progress: nothing missed up to here
        continue
      }
      next = max(next ?? 0, last.keyValue.modRevision + 1)
      let current: ChangeHint.CurrentVersion =
        last.kind == .delete ? .missing : .version(StoredVersion(last.keyValue))
      watch.tell(ChangeHint(
        contentMayDiffer: true, isRequestedRecheck: false,
        description: "etcd: \(last.kind == .delete ? "delete" : "put") at revision \(last.keyValue.modRevision)",
        current: current))
    }
  }

  /// A hint carrying what a read found.
  private func hint(for keyValue: EtcdKeyValue?, description: String) -> ChangeHint {
    ChangeHint(
      contentMayDiffer: true, isRequestedRecheck: false, description: description,
      current: keyValue.map { .version(StoredVersion($0)) } ?? .missing)
  }
}
