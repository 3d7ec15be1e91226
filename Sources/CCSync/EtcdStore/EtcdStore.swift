import CCSyncEtcd
import CCSyncSystem
import CCSyncJSON

/// A document kept under one key of an etcd cluster: the second ``DocumentStore``
/// (docs/ARCHITECTURE.md, "Beyond one machine: the etcd store").
///
/// - A version's identity is the key's `mod_revision`, which never recurs.
/// - A write reads the key (one range; none when its writer presumes the version it last saw
///   current, ``StoreWriter/presumedCurrent``), asks its writer for a plan, and sends one
///   transaction comparing `mod_revision == M` (or `create_revision == 0` for a missing key)
///   that puts the new value (and, for a value that is not valid JSON, its bytes under
///   `KEY.corrupt-REVISION` in the same transaction). When the compare fails, the failure
///   branch returns the key as it is now, and the writer plans again from it without another
///   round trip: the plan (and an `update` closure above it) may run more than once.
/// - The transaction also puts a stamp unique to it under `KEY.ccsync-write`. A transaction
///   sent with no answer (its outcome unknown) is sent again unchanged, which its compare
///   makes safe, until an answer settles it: applied (it succeeded, or the stamp key held its
///   stamp at some revision since the key was read) or not (the planned write starts over on
///   the key as it is). Only when no member answers within the settling
///   window, or the history was compacted, does the caller get ``StoreError/outcomeUnknown(_:)``.
/// - "May have changed" comes from one watch stream per process, cluster and key, shared by
///   the stores of that key (``EtcdWatch``, ``SharedKeyWatch``), whose events carry the new
///   value.
///
/// `Sendable`: immutable; the client is `Sendable`.
final class EtcdStore: DocumentStore {
  let location: EtcdLocation
  /// The client, or why none could be made (a malformed endpoint), reported by every call.
  let client: Result<EtcdClient, StoreError>
  let key: [UInt8]
  private let logger: DiagnosticLog
  /// The highest revision this store has read or written: where a new watch starts.
  private let knownRevision = Protected<Int64>(0)

  init(location: EtcdLocation, logger: DiagnosticLog) {
    self.location = location
    key = Array(location.key.utf8)
    self.logger = logger
    client = EtcdClients.shared.client(for: location)
  }

  /// A store on `location`'s key through `client` instead of the process's shared one (tests
  /// give a client whose transport fails on purpose).
  init(location: EtcdLocation, client: EtcdClient, logger: DiagnosticLog) {
    self.location = location
    key = Array(location.key.utf8)
    self.logger = logger
    self.client = .success(client)
  }

  var name: String { location.description }

  var writesWaitForOtherWriters: Bool { false }

  /// The key `relativePath` names beside this one, on the same cluster and client: `cfg/app`
  /// with `./app.schema.json` is `cfg/app.schema.json`; an absolute path names the key
  /// without its leading slash.
  func sibling(at relativePath: String) -> (any DocumentStore)? {
    var resolved = FilePath.resolve(relativePath, against: "/" + FilePath.directory(of: location.key))
    if resolved.hasPrefix("/") { resolved.removeFirst() }
    var siblingLocation = location
    siblingLocation.key = resolved
    guard case .success(let client) = self.client else { return EtcdStore(location: siblingLocation, logger: .silent) }
    return EtcdStore(location: siblingLocation, client: client, logger: .silent)
  }

  func read() throws(StoreError) -> StoredVersion? {
    try readWithRevision().version
  }

  /// ``read()``, with the store revision the read saw the key at.
  private func readWithRevision(deadline: Duration? = nil) throws(StoreError) -> (version: StoredVersion?, revision: Int64) {
    let client = try self.client.get()
    let (keyValue, revision) = try call { () throws(EtcdError) in try client.get(key, deadline: deadline) }
    note(revision)
    return (keyValue.map(StoredVersion.init), revision)
  }

  /// Only a read tells: a revision check is a read too.
  func provesUnchanged(_ identity: VersionIdentity) throws(StoreError) -> Bool {
    false
  }

  /// A write: without a wait (`.forever`, `.nonBlocking`) each call has the client's
  /// deadline (5 s) and the first call no member answers ends it. With `.timeout(LIMIT)` the
  /// whole write is bounded by LIMIT: each call gets what is left of it, and a write that
  /// found no member (nothing was written) is tried again, pausing 100 ms doubling to 1 s,
  /// until LIMIT has passed.
  func write(wait: ContentionWait, _ writer: some StoreWriter) throws {
    let client = try self.client.get()
    guard let limit = EtcdStore.deadline(for: wait) else { return try write(until: nil, client: client, writer) }
    let giveUpAt = ContinuousClock.now + limit
    var pause: Duration = .milliseconds(100)
    while true {
      do {
        return try write(until: giveUpAt, client: client, writer)
      } catch StoreError.unreachable(let message) {
        // Unreachable and timed-out calls sent nothing a member could have applied (a write
        // sent without an answer is `outcomeUnknown`), so the write may start over.
        let left = giveUpAt - ContinuousClock.now
        guard left > .milliseconds(50) else {
          throw StoreError.unreachable("\(message); no member answered in the \(EtcdStore.secondsText(limit)) s the write was given")
        }
        ContinuousClock.sleepThread(for: min(pause, left - .milliseconds(20)))
        pause = min(pause * 2, .seconds(1))
      }
    }
  }

  /// One try at a write: each call's deadline is what is left until `giveUpAt`, or the
  /// client's when `nil`.
  private func write(until giveUpAt: ContinuousClock.Instant?, client: EtcdClient, _ writer: some StoreWriter) throws {
    var deadline: Duration? { giveUpAt.map { max($0 - ContinuousClock.now, .milliseconds(1)) } }
    // The version the writer believes current saves the range: a stale one loses the
    // compare, and the failure branch brings the key as it is.
    var (current, basis): (StoredVersion?, Int64)
    var presumed = false
    if let believed = writer.presumedCurrent, let revision = believed.identity.order {
      (current, basis, presumed) = (believed, revision, true)
    } else {
      (current, basis) = try readWithRevision(deadline: deadline)
    }
    while true {
      switch try writer.plan(for: current) {
      case .abandon:
        return
      case .leave where presumed:
        // What is left must be a version the cluster was seen to hold: read, plan again.
        (current, basis) = try readWithRevision(deadline: deadline)
        presumed = false
      case .leave:
        writer.didLeave(current)  // a linearizable read: the version is committed on a quorum
        return
      case .replace(let bytes, let keepsInvalidCopy):
        var alsoWrite: [EtcdOperation] = []
        if keepsInvalidCopy, let current, !current.bytes.isEmpty, let revision = current.identity.order {
          alsoWrite.append(.put(key: key + Array(".corrupt-\(revision)".utf8), value: current.bytes, lease: nil))
        }
        let expected: EtcdExpectedKey
        if let revision = current?.identity.order { expected = .modifiedAt(revision) } else { expected = .absent }
        let swap = Swap(bytes: bytes, expected: expected, basis: basis, stamp: EtcdStore.writeStamps.next(note: writer.note), alsoWrite: alsoWrite)
        writer.willPublish(bytes)
        let outcome: SwapResult
        do {
          outcome = try self.swap(swap, client: client, deadline: deadline)
        } catch {
          writer.didNotPublish()
          throw error
        }
        switch outcome {
        case .written(let revision):
          note(revision)
          writer.didPublish(.ordered(revision))
          return
        case .conflict(let now, let revision):
          note(revision)
          writer.didNotPublish()
          (current, basis, presumed) = (now, revision, false)
        }
      }
    }
  }

  /// One compare-and-swap of a write: the new bytes, the version they replace, and the stamp
  /// that tells this transaction from every other.
  private struct Swap {
    var bytes: [UInt8]
    var expected: EtcdExpectedKey
    /// A store revision at which the key was as expected: its next change after this one is
    /// this swap's, if the swap was applied.
    var basis: Int64
    /// Written to ``EtcdStore/stampKey`` in the same transaction.
    var stamp: [UInt8]
    /// More puts of the success branch (the invalid value's copy).
    var alsoWrite: [EtcdOperation]
  }

  /// How a compare-and-swap ended.
  private enum SwapResult {
    /// The transaction was applied, at this revision.
    case written(Int64)
    /// The key was not the version expected, and never will be again: it is `now`, read at
    /// store revision `revision`. Plan again against it.
    case conflict(now: StoredVersion?, revision: Int64)
  }

  /// Sends `swap`'s transaction, settling an unknown outcome by sending the very same
  /// transaction again until one answer comes back:
  ///
  /// - compare `mod_revision(KEY) == M` (`create_revision == 0` for a missing key);
  /// - success: put the bytes at KEY, the stamp at `KEY.ccsync-write`, and the invalid copy;
  /// - failure: range KEY; in the copies sent after one went unanswered, also
  ///   `KEY.ccsync-write` (the first copy's stamp is new, so no stamp key can hold it yet).
  ///
  /// Sending it twice is safe: only one of the copies can find KEY as expected, since the
  /// one that applies changes it. So when a copy was sent without an answer (the member died,
  /// or stopped answering, after taking it), the next answer starts to tell what happened: a
  /// success is the only application. A failure means KEY changed since the swap's basis; an
  /// earlier copy applied if the stamp key held this swap's stamp at some revision since
  /// (``stampedSince(_:last:client:deadline:)``). Otherwise no copy applied, and none will
  /// while KEY does not return to the state expected (a modification revision never
  /// recurs; only a missing key can be missing again); the caller plans again. Comparing the
  /// document's bytes could not tell: two processes incrementing the same value write the
  /// same bytes.
  /// - Throws: ``StoreError/outcomeUnknown(_:)`` when no answer came within the settling
  ///   window (one call's deadline after the first unanswered copy), or the history that
  ///   tells was compacted; the other errors of a call (nothing was written then).
  private func swap(_ swap: Swap, client: EtcdClient, deadline: Duration?) throws(StoreError) -> SwapResult {
    let compare: EtcdCompare
    switch swap.expected {
    case .absent: compare = .absent(key)
    case .modifiedAt(let revision): compare = .modRevision(of: key, equals: revision)
    }
    let stampKey = self.stampKey
    var success: [EtcdOperation] = [.put(key: key, value: swap.bytes, lease: nil), .put(key: stampKey, value: swap.stamp, lease: nil)]
    success += swap.alsoWrite
    var unknown: EtcdError?
    var settleBy = ContinuousClock.now
    var pause: Duration = .milliseconds(50)
    while true {
      let result: EtcdTransactionResult
      do throws(EtcdError) {
        let failure: [EtcdOperation] = unknown == nil ? [.range(.key(key))] : [.range(.key(key)), .range(.key(stampKey))]
        result = try client.transaction(if: [compare], then: success, else: failure, deadline: deadline)
      } catch {
        if unknown == nil {
          guard case .outcomeUnknown = error else { throw StoreError(error, name: name) }
          // Send it again until an answer settles it, for as long as one call may take (a
          // leader election takes well under it).
          settleBy = ContinuousClock.now + (deadline ?? client.configuration.deadline)
          logger.log(.warning, "'\(name)': \(error); sending the same compare-and-swap again to learn whether it was applied")
        }
        if case .outcomeUnknown = error { unknown = error }
        guard ContinuousClock.now + pause < settleBy else {
          throw .outcomeUnknown(
            "'\(name)': \(unknown.map { "\($0)" } ?? "\(error)"); no member answered since (\(error)), so whether this write happened is unknown")
        }
        ContinuousClock.sleepThread(for: pause)
        pause = min(pause * 2, .milliseconds(400))
        continue
      }
      if result.succeeded {
        if unknown != nil { logger.log(.warning, "'\(name)': settled: the copy sent again applied, at revision \(result.revision)") }
        return .written(result.revision)
      }
      guard result.results.count == (unknown == nil ? 1 : 2), case .range(let now) = result.results[0] else {
        throw .cluster("'\(name)': a failed compare-and-swap without the ranges of its failure branch")
      }
      if unknown != nil {
        guard case .range(let stamped) = result.results[1] else {
          throw .cluster("'\(name)': a failed compare-and-swap without the ranges of its failure branch")
        }
        // A copy sent earlier was the last write, or, found in the stamp key's history, an
        // earlier one.
        var applied = stamped.first.flatMap { $0.value == swap.stamp ? $0.modRevision : nil }
        if applied == nil { applied = try stampedSince(swap, last: stamped.first, client: client, deadline: deadline) }
        logger.log(.warning, "'\(name)': settled: " + (applied.map { "a copy sent earlier applied, at revision \($0)" } ?? "no copy applied; planning again"))
        if let applied { return .written(applied) }
      }
      return .conflict(now: now.first.map(StoredVersion.init), revision: result.revision)
    }
  }

  /// Whether a copy of `swap` sent earlier applied, though other writes followed it: its
  /// revision, or `nil`. Every write through ccsync puts its own stamp, so the stamp key's
  /// versions since the swap's basis are the writes since, one each; `last` is its version
  /// now, and each earlier one is a read at the revision before. They are walked back to the
  /// basis (a handful after a leader election). A stamp key missing at some point (deleted
  /// with the document) ends the walk: whatever came before was deleted too.
  /// - Throws: ``StoreError/outcomeUnknown(_:)`` when the history cannot be read (compacted
  ///   since, or no member answers).
  private func stampedSince(_ swap: Swap, last: EtcdKeyValue?, client: EtcdClient, deadline: Duration?) throws(StoreError) -> Int64? {
    var version = last
    do throws(EtcdError) {
      while let stamp = version, stamp.modRevision > swap.basis {
        if stamp.value == swap.stamp { return stamp.modRevision }
        version = try client.get(stampKey, revision: stamp.modRevision - 1, deadline: deadline).keyValue
      }
      return nil
    } catch {
      throw .outcomeUnknown("'\(name)': a write's outcome is unknown, and the key's history cannot tell (\(error))")
    }
  }

  /// The key beside the document's that each write stamps in its transaction, so that a
  /// write whose answer was lost can be told from another writer's identical bytes.
  var stampKey: [UInt8] { key + Array(".ccsync-write".utf8) }

  /// The stamps of this process's writes.
  static let writeStamps = WriteStamps()

  func watch(_ handler: @escaping @Sendable (ChangeHint) -> Void) -> any StoreWatch {
    switch client {
    case .success(let client):
      return EtcdWatch(client: client, key: key, name: name, startRevision: knownRevision.withLock { $0 } + 1, logger: logger, handler: handler)
    case .failure:
      return EtcdWatch.inactive  // every read and write reports the configuration error
    }
  }

  /// A key's versions are whole: each is what its writer put.
  func partialWrite() -> PartialWrite { .impossible }

  /// Remembers that the store has seen `revision`.
  private func note(_ revision: Int64) {
    knownRevision.withLock { $0 = max($0, revision) }
  }

  /// Runs a client call, reporting its failure as a ``StoreError`` naming this key.
  func call<Result>(_ body: () throws(EtcdError) -> Result) throws(StoreError) -> Result {
    do {
      return try body()
    } catch {
      throw StoreError(error, name: name)
    }
  }

  /// How long a whole write may take: `nil` (each call has the client's deadline) unless a
  /// wait was given (`-w SECS`).
  static func deadline(for wait: ContentionWait) -> Duration? {
    guard case .timeout(let duration) = wait, duration > .zero else { return nil }
    return duration
  }

  /// `3`, `2.5`: a duration in seconds as messages give it.
  static func secondsText(_ duration: Duration) -> String {
    let milliseconds = duration.nanoseconds / 1_000_000
    return milliseconds % 1000 == 0 ? "\(milliseconds / 1000)" : "\(Double(milliseconds) / 1000)"
  }
}

/// Stamps that no other write, in this process or another, uses: 64 random bits drawn once
/// per process, and a counter. `Sendable`.
final class WriteStamps: Sendable {
  private let prefix: String
  private let counter = Protected<UInt64>(0)
  /// `{"stamp":"PREFIX `: the start of every stamp's text.
  private let opening: [UInt8]
  /// `,"author":{...}`: this process's author, formatted once.
  private let author: [UInt8]

  init() {
    prefix = String(UInt64.random(in: .min ... .max), radix: 16)
    opening = Array("{\"stamp\":\"\(prefix) ".utf8)
    author = Array(",\"author\":".utf8) + VersionAuthor.thisProcess.json.formattedBytes(.compact)
  }

  /// A new stamp: unique to one write, and signed: the author, the time and the write's
  /// note, so the key's history says who wrote each revision (``EtcdStore/versions(limit:)``).
  /// Its text is the compact JSON object `{"stamp","time","author"[,"rollbackOf"]}`, put
  /// together from parts made once: it goes with every write.
  func next(note: WriteNote? = nil) -> [UInt8] {
    let number = counter.withLock { counter -> UInt64 in
      counter += 1
      return counter
    }
    var text = opening
    text.reserveCapacity(opening.count + author.count + 64)
    text += String(number).utf8
    text += "\",\"time\":\"".utf8
    text += FileSystem.isoTimestamp(FileSystem.currentTime()).utf8
    text.append(UInt8(ascii: "\""))
    text += author
    if let rollbackOf = note?.rollbackOf {
      text += ",\"rollbackOf\":".utf8
      text += JSONValue.string(rollbackOf).formattedBytes(.compact)
    }
    text.append(UInt8(ascii: "}"))
    return text
  }
}

extension StoredVersion {
  /// An etcd key's value as a stored version.
  init(_ keyValue: EtcdKeyValue) {
    self.init(bytes: keyValue.value, identity: .ordered(keyValue.modRevision))
  }
}

extension StoreError {
  /// What a failed etcd call means to the document above: which ``StoreError`` case, with the
  /// client's message naming the endpoints, prefixed by the document's `name`.
  package init(_ error: EtcdError, name: String) {
    let message = "'\(name)': \(error)"
    switch error {
    case .invalidConfiguration(let reason): self = .invalidLocation(name, reason: reason)
    case .unreachable, .timeout: self = .unreachable(message)
    case .authenticationFailed, .permissionDenied, .tlsRefused: self = .accessDenied(message)
    case .requestTooLarge: self = .tooLarge(message)
    case .outcomeUnknown: self = .outcomeUnknown(message)
    case .compacted, .leaseNotFound, .server, .malformedReply, .watchEnded, .watchCanceled: self = .cluster(message)
    }
  }
}
