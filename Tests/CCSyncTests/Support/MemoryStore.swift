import Foundation
@testable import CCSync
import CCSyncSystem

/// A third ``DocumentStore``, kept in memory: versions numbered like revisions, writes one at a
/// time, news of each version delivered with it to the watches. It proves the store seam (the
/// document layer works on it unchanged) and gives the layers above fast tests that need no
/// files, no inotify and no cluster (`scripts/test --fast`).
///
/// `@unchecked Sendable`: every field is behind `state`'s lock; writes are serialised by
/// `writing`.
final class MemoryStore: DocumentStore, @unchecked Sendable {
  private struct State {
    var current: StoredVersion?
    var revision: Int64 = 0
    var kept: [(id: Int64, bytes: [UInt8], note: WriteNote?)] = []
    var watches: [UUID: @Sendable (ChangeHint) -> Void] = [:]
    var reads = 0
    var identityChecks = 0
  }

  let name: String
  private let state = Protected(State())
  private let writing = NSLock()
  /// Stores beside this one, by name (schemas a `$schema` names).
  private let neighbours: Protected<[String: MemoryStore]>

  init(name: String = "mem/doc.json", text: String? = nil, neighbours: Protected<[String: MemoryStore]> = Protected([:])) {
    self.name = name
    self.neighbours = neighbours
    neighbours.withLock { $0[name] = self }
    if let text { put(text) }
  }

  var writesWaitForOtherWriters: Bool { false }

  /// Puts `text` as a new version, as another process would; the watches hear of it.
  func put(_ text: String) {
    let (version, watches) = state.withLock { state -> (StoredVersion, [@Sendable (ChangeHint) -> Void]) in
      state.revision += 1
      let version = StoredVersion(bytes: Array(text.utf8), identity: .ordered(state.revision))
      if let current = state.current, let id = current.identity.order { state.kept.append((id, current.bytes, nil)) }
      state.current = version
      return (version, Array(state.watches.values))
    }
    notify(watches, version)
  }

  /// Removes the document, as another process would; the watches hear of it.
  func remove() {
    let watches = state.withLock { state -> [@Sendable (ChangeHint) -> Void] in
      if let current = state.current, let id = current.identity.order { state.kept.append((id, current.bytes, nil)) }
      state.current = nil
      return Array(state.watches.values)
    }
    let news = MemoryStore.news(of: nil, carriesVersion: newsCarriesVersions.withLock { $0 })
    for watch in watches { watch(news) }
  }

  /// The news of `version` (`nil`: the document is gone) as this store's watches hear it:
  /// the version with it, as an etcd watch event carries the key's value; with
  /// `carriesVersion` false only that something changed, as a file's event says.
  static func news(of version: StoredVersion?, carriesVersion: Bool = true) -> ChangeHint {
    var hint = ChangeHint(contentMayDiffer: false, isRequestedRecheck: false, description: version == nil ? "memory delete" : "memory write")
    if carriesVersion { hint.current = version.map { .version($0) } ?? .missing(asOf: nil) }
    return hint
  }

  /// Whether the news of a change carries the version (default), or only says to look, as a
  /// file's does: a follower then looks with ``provesUnchanged(_:)`` (counted in
  /// ``identityChecks``) or a read (counted in ``reads``).
  let newsCarriesVersions = Protected(true)

  /// When set, every write fails with this error before it plans, as a write cut short by a
  /// crash or a full disk would: nothing is written.
  let failingWrites = Protected<StoreError?>(nil)

  /// How many times the store was read, and asked whether it still holds a version.
  var reads: Int { state.withLock(\.reads) }
  var identityChecks: Int { state.withLock(\.identityChecks) }

  /// The current text.
  var text: String? { state.withLock { $0.current.map { String(decoding: $0.bytes, as: UTF8.self) } } }

  func read() throws(StoreError) -> StoredVersion? {
    state.withLock { state in
      state.reads += 1
      return state.current
    }
  }

  func provesUnchanged(_ identity: VersionIdentity) throws(StoreError) -> Bool {
    state.withLock { state in
      state.identityChecks += 1
      return state.current?.identity == identity
    }
  }

  func write(wait: ContentionWait, _ writer: some StoreWriter) throws {
    writing.lock()
    defer { writing.unlock() }
    if let failure = failingWrites.withLock({ $0 }) { throw failure }
    let current = state.withLock(\.current)
    switch try writer.plan(for: current) {
    case .abandon:
      return
    case .leave:
      writer.didLeave(current)
    case .replace(let bytes, _):
      writer.willPublish(bytes)
      let (version, watches) = state.withLock { state -> (StoredVersion, [@Sendable (ChangeHint) -> Void]) in
        state.revision += 1
        if let current = state.current, let id = current.identity.order { state.kept.append((id, current.bytes, writer.note)) }
        state.current = StoredVersion(bytes: bytes, identity: .ordered(state.revision))
        return (state.current!, Array(state.watches.values))
      }
      writer.didPublish(version.identity)
      notify(watches, version)
    }
  }

  private func notify(_ watches: [@Sendable (ChangeHint) -> Void], _ version: StoredVersion) {
    let hint = MemoryStore.news(of: version, carriesVersion: newsCarriesVersions.withLock { $0 })
    for watch in watches { watch(hint) }
  }

  func watch(_ handler: @escaping @Sendable (ChangeHint) -> Void) -> any StoreWatch {
    let id = UUID()
    state.withLock { $0.watches[id] = handler }
    return MemoryWatch(held: heldRechecks) { [weak self] in _ = self?.state.withLock { $0.watches.removeValue(forKey: id) } } recheck: {
      handler($0)
    }
  }

  /// When set, the re-checks watches are asked for wait here, each until a test runs it,
  /// instead of running after their delay: a test of a grace then needs no clock.
  let heldRechecks = Protected<[@Sendable () -> Void]?>(nil)

  /// Runs the re-checks held, in order; returns how many ran.
  @discardableResult
  func runHeldRechecks() -> Int {
    let held = heldRechecks.withLock { held in
      defer { if held != nil { held = [] } }
      return held ?? []
    }
    for recheck in held { recheck() }
    return held.count
  }

  /// What an invalid version may be: whole by default, as a key's; a test sets `.possible`
  /// or `.likely` to stand for a store written in place.
  let partialWrites = Protected(PartialWrite.impossible)

  func partialWrite() -> PartialWrite { partialWrites.withLock { $0 } }

  func sibling(at relativePath: String) -> (any DocumentStore)? {
    let resolved = FilePath.resolve(relativePath, against: FilePath.directory(of: name))
    return neighbours.withLock { $0[resolved] }
  }

  func versions(limit: Int?) throws(StoreError) -> [DocumentVersion] {
    state.withLock { state in
      var versions: [DocumentVersion] = []
      if let current = state.current, let id = current.identity.order {
        versions.append(DocumentVersion(id: String(id), time: nil, author: .thisProcess, rollbackOf: nil, isCurrent: true))
      }
      for kept in state.kept.reversed() {
        versions.append(DocumentVersion(id: String(kept.id), time: nil, author: .thisProcess, rollbackOf: kept.note?.rollbackOf, isCurrent: false))
      }
      return Array(versions.prefix(limit ?? Int.max))
    }
  }

  func contents(ofVersion id: String) throws(StoreError) -> [UInt8]? {
    state.withLock { state in
      if let current = state.current, current.identity == .ordered(Int64(id) ?? -1) { return current.bytes }
      return state.kept.first { String($0.id) == id }?.bytes
    }
  }

  func setHistoryLimit(_ count: Int) throws(StoreError) {}
}

/// A watch of a ``MemoryStore``.
final class MemoryWatch: StoreWatch, @unchecked Sendable {
  private let stop: @Sendable () -> Void
  private let again: @Sendable (ChangeHint) -> Void
  private let held: Protected<[@Sendable () -> Void]?>

  init(
    held: Protected<[@Sendable () -> Void]?>, stop: @escaping @Sendable () -> Void, recheck: @escaping @Sendable (ChangeHint) -> Void
  ) {
    self.held = held
    self.stop = stop
    self.again = recheck
  }

  func cancel() { stop() }

  func recheck(after delay: Duration) {
    let again = self.again
    let hint = ChangeHint(contentMayDiffer: true, isRequestedRecheck: true, description: "recheck")
    let isHeld = held.withLock { held -> Bool in
      guard held != nil else { return false }
      held?.append { again(hint) }
      return true
    }
    if isHeld { return }
    DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(delay.components.seconds * 1_000_000_000 + delay.components.attoseconds / 1_000_000_000))) {
      again(ChangeHint(contentMayDiffer: true, isRequestedRecheck: true, description: "recheck"))
    }
  }
}
