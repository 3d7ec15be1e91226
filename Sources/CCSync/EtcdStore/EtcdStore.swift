import CCSyncEtcd
import CCSyncSystem

/// A document kept under one key of an etcd cluster: the second ``DocumentStore``
/// (docs/ARCHITECTURE.md, "Beyond one machine: the etcd store").
///
/// - A version's identity is the key's `mod_revision`, which never recurs.
/// - A write reads the key (one range), asks its writer for a plan, and sends one
///   transaction comparing `mod_revision == M` (or `create_revision == 0` for a missing key)
///   that puts the new value (and, for a value that is not valid JSON, its bytes under
///   `KEY.corrupt-REVISION` in the same transaction). When the compare fails, the failure
///   branch returns the key as it is now, and the writer plans again from it without another
///   round trip: the plan (and an `update` closure above it) may run more than once.
/// - A write sent with no answer (its outcome unknown) is never repeated blindly: the key is
///   read again; the write is known done when it holds the written bytes, known not done when
///   its revision is still the one compared against (and is then planned again); otherwise
///   the caller gets ``StoreError/outcomeUnknown(_:)``.
/// - "May have changed" comes from one watch stream per process and key (``EtcdWatch``),
///   whose events carry the new value.
///
/// `Sendable`: immutable; the client is `Sendable`.
final class EtcdStore: DocumentStore {
  let location: EtcdLocation
  /// The client, or why none could be made (a malformed endpoint), reported by every call.
  private let client: Result<EtcdClient, StoreError>
  private let key: [UInt8]
  private let logger: DiagnosticLog
  /// The highest revision this store has read or written: where a new watch starts.
  private let knownRevision = Protected<Int64>(0)

  init(location: EtcdLocation, logger: DiagnosticLog) {
    self.location = location
    key = Array(location.key.utf8)
    self.logger = logger
    client = EtcdClients.shared.client(for: location)
  }

  var name: String { location.description }

  func read() throws(StoreError) -> StoredVersion? {
    let client = try self.client.get()
    let (keyValue, revision) = try call { () throws(EtcdError) in try client.get(key) }
    note(revision)
    return keyValue.map(StoredVersion.init)
  }

  /// Only a read tells: a revision check is a read too.
  func provesUnchanged(_ identity: VersionIdentity, seenAt: FileIdentity.Timestamp) throws(StoreError) -> Bool {
    false
  }

  func write(wait: LockWait, _ writer: some StoreWriter) throws {
    let client = try self.client.get()
    let deadline = EtcdStore.deadline(for: wait)
    var current = try read()
    while true {
      switch try writer.plan(for: current) {
      case .abandon:
        return
      case .leave:
        writer.didLeave(current)  // a linearizable read: the version is committed on a quorum
        return
      case .replace(let bytes, let keepsInvalidCopy):
        var alsoWrite: [EtcdOperation] = []
        if keepsInvalidCopy, let current, !current.bytes.isEmpty, case .revision(let revision) = current.identity {
          alsoWrite.append(.put(key: key + Array(".corrupt-\(revision)".utf8), value: current.bytes, lease: nil))
        }
        let expected: EtcdExpectedKey
        if case .revision(let revision)? = current?.identity { expected = .modifiedAt(revision) } else { expected = .absent }
        writer.willPublish(bytes)
        let outcome: EtcdSwapOutcome
        do throws(EtcdError) {
          outcome = try client.compareAndSwap(key, expecting: expected, value: bytes, alsoWrite: alsoWrite, deadline: deadline)
        } catch {
          let resolved: ResolvedOutcome
          do throws(StoreError) {
            guard case .outcomeUnknown = error else { throw StoreError(error, name: name) }
            resolved = try resolveUnknownOutcome(of: bytes, expected: expected, error: error)
          } catch {
            writer.didNotPublish()
            throw error
          }
          switch resolved {
          case .written(let revision):
            writer.didPublish(.revision(revision))
            return
          case .notWritten(let now):
            writer.didNotPublish()
            current = now
            continue
          }
        }
        switch outcome {
        case .swapped(let revision):
          note(revision)
          writer.didPublish(.revision(revision))
          return
        case .conflict(let now, let revision):
          note(revision)
          writer.didNotPublish()
          current = now.map(StoredVersion.init)
        }
      }
    }
  }

  /// What a write whose outcome is unknown did, learned by reading the key again.
  private enum ResolvedOutcome {
    /// The key holds the written bytes, at this revision: the write happened.
    case written(Int64)
    /// The key is still the version compared against (it is `now`): the write did not
    /// happen and may be planned again.
    case notWritten(StoredVersion?)
  }

  /// Reads the key after a write whose outcome is unknown.
  /// - Throws: ``StoreError/outcomeUnknown(_:)`` when the key moved on to other bytes: the
  ///   write may have happened before another one, and repeating it could apply a change
  ///   twice.
  private func resolveUnknownOutcome(of bytes: [UInt8], expected: EtcdExpectedKey, error: EtcdError) throws(StoreError) -> ResolvedOutcome {
    let now = try read()
    switch (expected, now?.identity) {
    case (.absent, nil):
      return .notWritten(nil)
    case (.modifiedAt(let revision), .revision(let current)?) where current == revision:
      return .notWritten(now)
    default:
      if let now, now.bytes == bytes, case .revision(let revision) = now.identity { return .written(revision) }
      throw .outcomeUnknown("\(name): \(error); the key has changed since, so whether this write happened is unknown")
    }
  }

  func watch(_ handler: @escaping @Sendable (ChangeHint) -> Void) -> any StoreWatch {
    switch client {
    case .success(let client):
      return EtcdWatch(client: client, key: key, name: name, startRevision: knownRevision.withLock { $0 } + 1, logger: logger, handler: handler)
    case .failure:
      return EtcdWatch.inactive  // every read and write reports the configuration error
    }
  }

  func nestedWriteError() -> StoreError {
    .system(SystemError(
      code: ErrorNumber.wouldDeadlock.rawValue, operation: "update (nested in an update of the same document on this thread)",
      path: name))
  }

  func mayBeMidWrite() -> Bool { false }

  /// Remembers that the store has seen `revision`.
  private func note(_ revision: Int64) {
    knownRevision.withLock { $0 = max($0, revision) }
  }

  /// Runs a client call, reporting its failure as a ``StoreError`` naming this key.
  private func call<Result>(_ body: () throws(EtcdError) -> Result) throws(StoreError) -> Result {
    do {
      return try body()
    } catch {
      throw StoreError(error, name: name)
    }
  }

  /// A write's deadline: the client's (5 s) unless a longer wait was asked for.
  static func deadline(for wait: LockWait) -> Duration? {
    guard case .timeout(let duration) = wait, duration > .seconds(5) else { return nil }
    return duration
  }
}

extension StoredVersion {
  /// An etcd key's value as a stored version.
  init(_ keyValue: EtcdKeyValue) {
    self.init(bytes: keyValue.value, identity: .revision(keyValue.modRevision))
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
    case .authenticationFailed, .permissionDenied: self = .accessDenied(message)
    case .requestTooLarge: self = .tooLarge(message)
    case .outcomeUnknown: self = .outcomeUnknown(message)
    case .compacted, .leaseNotFound, .server, .malformedReply, .watchEnded, .watchCanceled: self = .cluster(message)
    }
  }
}
