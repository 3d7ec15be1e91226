import CCSyncSystem
import CCSyncJSON

/// What a ``SharedDocument`` knows of its store's versions, and the rules that keep its
/// records in the order the versions appeared in the store (docs/ARCHITECTURE.md, "Versions
/// and ranks"). Readers (the reload, `load`) and writers (any thread) record versions
/// concurrently; the document keeps one `VersionTracking` behind a lock and calls these pure
/// functions under it. No I/O, no threads: each function is tested on its own.
///
/// The invariants:
/// - ``generation`` grows whenever ``seen`` changes and when a write starts; a version is
///   recorded only by a reader that started at the current generation, or by a writer for the
///   version it put in place, so a version older than one recorded is never recorded over it;
/// - a ``Rank`` is given only to a version recorded (or, for a write that found nothing to
///   change, to the version it left), so ranks grow in the order the versions appeared;
/// - while ``writing`` holds bytes, a reader that finds exactly them has found this process's
///   own write, which is never reported as another's change.
package struct VersionTracking {
  /// Where a version stands among those this document recorded: its generation, then, for
  /// the requests of one group-commit batch (one write), the request's position in the batch,
  /// since each request's result is the document as it stood after that request. `Sendable`.
  package struct Rank: Comparable, Sendable {
    var generation: UInt64
    var position: Int = 0

    package static func < (lhs: Rank, rhs: Rank) -> Bool {
      (lhs.generation, lhs.position) < (rhs.generation, rhs.position)
    }
  }

  /// The version of the store this process last read or wrote.
  struct SeenVersion {
    var identity: VersionIdentity
    var bytes: [UInt8]
    /// Why this version is not a valid document, or `nil` when it is.
    var problem: StorageError? = nil
    /// The document `bytes` parse to, kept by a process that writes (from its first write on):
    /// its next write, reading these very bytes again, takes it instead of parsing them, and
    /// one reading a version that differs from them inside top-level values parses those
    /// values alone (see ``knownVersion(for:)``). A process that only reads keeps none: it
    /// would pay its memory (about three times the text's size) for nothing.
    var document: JSONValue? = nil
    /// Where `document`'s top-level members lie in `bytes`, when known: the printer's text
    /// of `document`, or text edited in place (see ``TextLayout``).
    var layout: TextLayout? = nil
    /// The problem last reported for this version (its reason): a problem is reported once
    /// per version and reason (see ``VersionTracking/marksReported(_:)``).
    var reportedProblem: String? = nil

    /// Whether this is `version`: the same identity or the same bytes.
    func isVersion(_ version: StoredVersion?) -> Bool {
      guard let version else { return false }
      return identity == version.identity || bytes.hasSameBytes(as: version.bytes)
    }

    /// Whether `version`, found with the same bytes as this one, is this version seen again
    /// rather than another write of the same text: the same identity, or a store with no
    /// order of versions (a file, whose identity can change under the same content: the
    /// history's link raises its `ctime`). An ordered store's new order is a new version.
    func isSeenAgain(_ version: StoredVersion) -> Bool {
      identity == version.identity || version.identity.order == nil
    }

    /// `bytes` parsed by way of this version, when it kept its document: the same bytes give
    /// that document, bytes that differ inside top-level values the parse of those values
    /// (read in `syntax`); `nil` otherwise (the caller parses).
    func knownVersion(for bytes: [UInt8], syntax: JSONSyntax) -> (document: JSONValue, layout: TextLayout?)? {
      guard let document else { return nil }
      if self.bytes.hasSameBytes(as: bytes) { return (document, layout) }
      return layout?.parse(bytes, over: self.bytes, parsedAs: document, syntax: syntax)
    }
  }

  /// A version read outside a write: its document, the document to keep with it as seen, and
  /// its layout.
  struct ParsedVersion {
    var document: JSONValue
    /// `document` when the version seen before kept its document (a process that writes:
    /// its next update then starts from this one without a parse), `nil` otherwise.
    var kept: JSONValue?
    var layout: TextLayout?
  }

  /// What a reader started from: the version recorded and the generation then.
  struct ReadStart {
    var seen: SeenVersion?
    var generation: UInt64
  }

  /// The version last read or written.
  var seen: SeenVersion?
  /// Bumped whenever `seen` changes and when a write starts.
  var generation: UInt64 = 0
  /// The problem last reported while no version was recorded (a document that could not be
  /// read), until one is.
  var reportedWithoutVersion: String?
  /// The bytes a write of this process is putting in place, from just before they become
  /// visible until they are recorded.
  var writing: [UInt8]?

  /// Where a reader starts.
  var readStart: ReadStart { ReadStart(seen: seen, generation: generation) }

  /// Records `version`, read outside a write and parsed as `parsed`, if nothing was recorded
  /// since `start` or this is the last attempt (see ``RacingReadPolicy``).
  /// - Returns: its rank, or `nil` when it raced with another recording (read again).
  mutating func recordRead(
    _ version: StoredVersion, _ parsed: ParsedVersion, since start: ReadStart, isLastAttempt: Bool
  ) -> Rank? {
    guard generation == start.generation || isLastAttempt else { return nil }
    generation += 1
    // The same version read again keeps what was reported of it (the bytes are compared
    // only when something was).
    let reported = seen.flatMap { seen in
      seen.reportedProblem.flatMap { seen.isSeenAgain(version) && seen.bytes.hasSameBytes(as: version.bytes) ? $0 : nil }
    }
    seen = SeenVersion(
      identity: version.identity, bytes: version.bytes, document: parsed.kept, layout: parsed.layout, reportedProblem: reported)
    return Rank(generation: generation)
  }

  /// What a look at the store found: a version's bytes, the same as the version the reader
  /// started from (`sameBytes`, then `parsed` is `nil`) or parsed (or failing to parse).
  /// Records it as seen, valid or not, so one invalid version is reported each time it is
  /// looked at closely but a mere identity check of it finds it unchanged.
  /// - Returns: the observation and, for `.changed`, its rank; `nil` when the look raced with
  ///   another recording (look again).
  mutating func observe(
    _ version: StoredVersion, sameBytes: Bool, parsed: Result<ParsedVersion, StorageError>?, since start: ReadStart,
    isLastAttempt: Bool
  ) -> (SharedDocument.Observation, Rank?)? {
    if writing?.hasSameBytes(as: version.bytes) == true { return (.unchanged, nil) }  // our own write, finishing
    guard generation == start.generation || isLastAttempt else { return nil }
    if sameBytes, let startSeen = start.seen {
      // On the last attempt the version recorded may have moved on since the reader started:
      // the identity read belongs to the bytes read, so it is given only to a version with
      // those bytes (given to another, a later identity check would take that version for
      // the store's).
      if generation == start.generation || seen?.bytes.hasSameBytes(as: version.bytes) == true {
        if seen?.isSeenAgain(version) == false { seen?.reportedProblem = nil }  // another write of the same text
        seen?.identity = version.identity  // as seen now: the store's check may trust it sooner
      }
      return (startSeen.problem.map { .invalid($0) } ?? .unchanged, nil)
    }
    generation += 1
    switch parsed {
    case .success(let parsed):
      seen = SeenVersion(identity: version.identity, bytes: version.bytes, document: parsed.kept, layout: parsed.layout)
      return (.changed(parsed.document), Rank(generation: generation))
    case .failure(let error):
      seen = SeenVersion(identity: version.identity, bytes: version.bytes, problem: error)
      return (.invalid(error), nil)
    case nil:
      return (.unchanged, nil)  // not reached: `parsed` is nil only with `sameBytes`
    }
  }

  /// A look found no version (the file is gone).
  /// - Returns: `.missing` when a version was recorded before, `.unchanged` when none was;
  ///   `nil` when the look raced with another recording.
  mutating func observeMissing(since start: ReadStart, isLastAttempt: Bool) -> SharedDocument.Observation? {
    guard generation == start.generation || isLastAttempt else { return nil }
    if seen != nil { generation += 1 }
    seen = nil
    reportedWithoutVersion = nil
    return start.seen != nil ? .missing : .unchanged
  }

  /// `version`, the version seen when the gate refused it, passes the gate now (its schema
  /// changed): recorded as valid, under a new rank.
  /// - Returns: its rank; `nil` when another version was recorded since.
  mutating func recordPassing(_ version: SeenVersion) -> Rank? {
    guard let current = seen, current.identity == version.identity, current.bytes.hasSameBytes(as: version.bytes) else {
      return nil
    }
    generation += 1
    seen?.problem = nil
    seen?.reportedProblem = nil
    return Rank(generation: generation)
  }

  /// Forgets the version seen, so that the next look reports whatever the store holds.
  mutating func forget() {
    seen = nil
    reportedWithoutVersion = nil
    generation += 1
  }

  /// Marks `reason` reported for the version recorded (or, with none recorded, for the
  /// document): the one rule by which a refused or invalid version is reported once per
  /// version and reason (docs/SEMANTICS.md, "The gate"). A version recorded anew starts
  /// unmarked; the same version read again keeps its mark (see
  /// ``SeenVersion/isSeenAgain(_:)``).
  /// - Returns: whether it is news: not the problem last reported for that version.
  mutating func marksReported(_ reason: String) -> Bool {
    if seen != nil {
      guard seen?.reportedProblem != reason else { return false }
      seen?.reportedProblem = reason
      return true
    }
    guard reportedWithoutVersion != reason else { return false }
    reportedWithoutVersion = reason
    return true
  }

  /// A write of this process is about to put `bytes` in place. The generation is bumped, so a
  /// read that began earlier (and may have read the version being replaced) looks again
  /// instead of recording it over this one.
  /// - Returns: the generation the write started at.
  mutating func beginWrite(_ bytes: [UInt8]) -> UInt64 {
    generation += 1
    writing = bytes
    return generation
  }

  /// The write begun with ``beginWrite(_:)`` put nothing in place.
  mutating func abandonWrite() {
    writing = nil
  }

  /// The write begun at `started` put `bytes` in place as `identity`, replacing `replacing`.
  /// A version recorded while it was under way is kept when it is newer (a writer that ignores
  /// the lock put its version over this one) and overwritten when it is the one this write
  /// replaced: the same identity, or the same bytes, since a version's identity can change
  /// under the write without its content (the history's link of a file raises its `ctime`).
  /// - Returns: the generation the written version ranks under, and the version record it
  ///   replaced (for the caller to free after releasing the lock).
  mutating func finishWrite(
    _ bytes: [UInt8], identity: VersionIdentity, document: JSONValue, layout: TextLayout?,
    replacing: StoredVersion?, started: UInt64
  ) -> (generation: UInt64, retired: SeenVersion?) {
    writing = nil
    if generation != started, let seen, seen.identity != identity, !seen.isVersion(replacing) {
      return (started, nil)  // a newer version was recorded meanwhile: this one ranks before it
    }
    generation += 1
    let retired = seen
    seen = SeenVersion(identity: identity, bytes: bytes, document: document, layout: layout)
    return (generation, retired)
  }

  /// Ranks the version a write found and left in place (nothing to change), so that its
  /// result takes its place among the versions recorded: a result ranked nowhere would be
  /// taken over a newer version a reader recorded meanwhile, and the process would keep the
  /// older value with no event left to correct it.
  ///
  /// The version last recorded with the same bytes is this one. Otherwise, when nothing was
  /// recorded since before the write's read (`generationBeforeRead`), this version is the
  /// newest known and is recorded. When another version was recorded since, it may have been
  /// read before this one or after (a writer that put a newer version in place after the
  /// lock was released): this version then ranks before it and does not replace it. If that
  /// other version was the older one, its reader read it before this one appeared, whose
  /// event is still to come.
  /// - Returns: the generation this version ranks under, and the record it replaced.
  mutating func recordLeft(
    _ version: StoredVersion?, document: JSONValue?, layout: TextLayout?, generationBeforeRead: UInt64
  ) -> (generation: UInt64, retired: SeenVersion?) {
    guard let version else { return (generationBeforeRead, nil) }
    if let seen, seen.bytes.hasSameBytes(as: version.bytes) { return (generation, nil) }
    guard generation == generationBeforeRead else { return (generationBeforeRead, nil) }
    generation += 1
    let retired = seen
    seen = SeenVersion(identity: version.identity, bytes: version.bytes, document: document, layout: layout)
    return (generation, retired)
  }
}

/// How a read that raced with another recording (a write of this process, or another read
/// recording a later version) is retried: up to four attempts, and the last records what it
/// read whatever happened meanwhile, so an endless race cannot starve a reader. A version
/// older than one already recorded is never recorded with a newer rank by the first three.
enum RacingReadPolicy {
  /// How many attempts a read makes.
  static let attempts = 4

  /// Runs `attempt` until it returns a result (`nil`: it raced, try again), telling it
  /// whether it is the last attempt, which returns one by the recording rules
  /// (``VersionTracking``); `fallback` is what a last attempt that did not would give.
  static func run<Result, Failure: Error>(
    fallback: @autoclosure () -> Result, _ attempt: (_ isLastAttempt: Bool) throws(Failure) -> Result?
  ) throws(Failure) -> Result {
    for number in 1...attempts {
      if let result = try attempt(number == attempts) { return result }
    }
    return fallback()
  }
}
