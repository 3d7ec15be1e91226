import CCSyncJSON
import CCSyncSystem

/// Groups read-modify-write requests from several threads of one process into one locked
/// write: the first thread to arrive leads, takes every request queued so far, runs them in
/// order under one lock and one write, and wakes their threads; requests arriving meanwhile
/// form the next batch. With M threads, up to M updates share one `fsync`.
///
/// `@unchecked Sendable`: `queue` and `leaderActive` are guarded by `condition`.
final class GroupCommit: @unchecked Sendable {
  /// One caller's request and its outcome, whatever its closure returns (see
  /// ``TypedRequest``, which keeps the result with its type).
  ///
  /// `@unchecked Sendable`: the submitting thread blocks in ``GroupCommit/submit(_:perform:)``
  /// while the leader runs the closure and fills in the outcome; it reads them only after the
  /// leader has marked the request done under the group's lock.
  class Request: @unchecked Sendable {
    let invalidFile: SharedDocument.InvalidFilePolicy
    let missingFile: SharedDocument.MissingFilePolicy
    let writes: SharedDocument.WritePolicy
    fileprivate(set) var error: (any Error)?
    /// The rank of the version this request's result is (see ``VersionTracking/Rank``): the
    /// batch's write, or the version read and left in place when there was nothing to write,
    /// then this request's place in the batch; `nil` when it failed.
    var resultRank: VersionTracking.Rank?
    fileprivate var isDone = false
    /// Set when the caller's task is cancelled (an `async` update): the request is failed with
    /// `CancellationError` instead of being run by any plan made after it is set.
    var cancellation: CancellationFlag?
    /// Whether the caller takes the version the document last saw for the current one (see
    /// ``SharedDocument/updateTracked(wait:invalidFile:missingFile:writes:cancellation:presumingLatestSeen:_:)``).
    var presumesLatestSeen = false

    init(
      invalidFile: SharedDocument.InvalidFilePolicy, missingFile: SharedDocument.MissingFilePolicy,
      writes: SharedDocument.WritePolicy
    ) {
      self.invalidFile = invalidFile
      self.missingFile = missingFile
      self.writes = writes
    }

    /// Whether the closure ran without throwing (and no later step failed it).
    var succeeded: Bool { hasResult && error == nil }

    /// Whether the closure returned (in its last run).
    fileprivate(set) var hasResult = false

    /// Runs the closure on a copy of `document`, keeping the copy only if it did not throw.
    /// `fileHeldDocument`: whether the read found a document (see
    /// ``SharedDocument/updateTracked(wait:invalidFile:missingFile:writes:_:)``). Each run
    /// starts over: a store that plans a write again runs every request again.
    func run(on document: inout JSONValue, fileHeldDocument: Bool) {}

    /// Records an error that ends this request (a lock or write failure).
    func fail(_ error: any Error) {
      self.error = error
    }

    /// Rethrows the request's error, if any.
    func outcome() throws {
      if let error { throw error }
    }

    /// Drops the closure: it belongs to a caller's stack frame and must not outlive the call.
    fileprivate func finish() {
      isDone = true
    }
  }

  /// A request whose closure returns a `Result`, kept with its type for the caller.
  final class TypedRequest<Result>: Request, @unchecked Sendable {
    private var body: ((inout JSONValue, Bool) throws -> Result)?
    /// What the closure returned in some run; this run's when ``Request/hasResult``.
    private var lastResult: Result?

    /// What the closure returned in its last run, or `nil` when it threw there.
    var result: Result? { hasResult ? lastResult : nil }

    init(
      invalidFile: SharedDocument.InvalidFilePolicy, missingFile: SharedDocument.MissingFilePolicy,
      writes: SharedDocument.WritePolicy, _ body: @escaping (inout JSONValue, _ fileHeldDocument: Bool) throws -> Result
    ) {
      self.body = body
      super.init(invalidFile: invalidFile, missingFile: missingFile, writes: writes)
    }

    override func run(on document: inout JSONValue, fileHeldDocument: Bool) {
      guard let body else { return }
      // `hasResult` says whether `lastResult` is this run's: clearing it too would cost a
      // run-time lookup of `Result?`'s metadata (this code runs unspecialized).
      hasResult = false
      error = nil
      var draft = document
      do {
        lastResult = try body(&draft, fileHeldDocument)
        hasResult = true
        document = draft
      } catch {
        self.error = error
      }
    }

    fileprivate override func finish() {
      body = nil
      super.finish()
    }
  }

  private let condition = ConditionLock()
  private var queue: [Request] = []
  private var leaderActive = false
  /// The thread running the current batch (``ThreadIdentity/current``), while one runs.
  private var leaderThread: UInt?

  /// A request submitted by the thread running the current batch (an update nested in an
  /// update's closure): it would wait for its own batch for ever, so it is refused.
  struct NestedSubmission: Error {}

  /// How many requests are queued for the next batch (a test waits on it to know a save has
  /// taken its change set and is waiting behind the batch being written).
  var queuedCount: Int { condition.withLock { queue.count } }

  /// Queues `request` and returns once it has run, leading a batch with `perform` if no other
  /// thread is.
  /// - Throws: the request's own error; ``NestedSubmission`` when the calling thread is
  ///   running a batch.
  func submit(_ request: Request, perform: ([Request]) throws -> Void) throws {
    let thread = ThreadIdentity.current
    let nested = condition.withLock { () -> Bool in
      if leaderActive && leaderThread == thread { return true }
      queue.append(request)
      return false
    }
    if nested { throw NestedSubmission() }
    while let batch = nextBatch(for: request) {
      do {
        try perform(batch)
      } catch {
        for member in batch where member.error == nil { member.fail(error) }
      }
      condition.withLock {
        for member in batch { member.finish() }
        leaderActive = false
        leaderThread = nil
        condition.broadcast()
      }
    }
    try request.outcome()
  }

  /// Waits until `request` is done (then `nil`) or this thread may lead (then the batch).
  private func nextBatch(for request: Request) -> [Request]? {
    condition.withLock {
      while !request.isDone && leaderActive { condition.wait() }
      if request.isDone { return nil }
      leaderActive = true
      leaderThread = ThreadIdentity.current
      let batch = queue
      queue = []
      return batch
    }
  }
}
