import CCSyncSystem

/// A document kept in one file on this machine: the first ``DocumentStore``.
///
/// Reads and writes go through ``SharedFile`` (the sidecar `flock`, the atomic and durable
/// replace, symlinks written through); "may have changed" comes from the process's shared
/// ``FileWatcher`` (inotify on the directory, the safety re-check, polling where inotify is
/// missing). A write holds the exclusive lock from its read to its rename, so its plan is made
/// exactly once (docs/ARCHITECTURE.md, "A save, step by step").
///
/// `Sendable`: immutable; ``SharedFile`` and ``FileWatcher`` are `Sendable`.
final class FileStore: DocumentStore {
  /// How long after a version's last change its identity may recur (see
  /// ``FileIdentity/mayRecur(seenAt:window:)``): until then an unchanged identity proves
  /// nothing and only the bytes tell. 2 s, the coarsest timestamp tick of common file systems.
  static let identityRecurrenceWindow: Int64 = 2_000_000_000

  /// The file underneath.
  let file: SharedFile
  /// ``identityRecurrenceWindow``, or another for tests.
  let identityRecurrenceWindow: Int64
  /// The watcher that tells this store's watches about changes.
  let watcher: FileWatcher
  /// The history of the last target written (its paths are made once, not on every write).
  private let lastHistory = Protected<FileHistory?>(nil)

  init(file: SharedFile, identityRecurrenceWindow: Int64 = FileStore.identityRecurrenceWindow,
       watcher: FileWatcher = .shared) {
    self.file = file
    self.identityRecurrenceWindow = identityRecurrenceWindow
    self.watcher = watcher
  }

  var name: String { file.path }

  var writesWaitForOtherWriters: Bool { true }

  /// A file beside this one's resolved path (through a symbolic link, beside its target).
  func sibling(at relativePath: String) -> (any DocumentStore)? {
    let directory = FilePath.directory(of: (try? file.resolvedPath()) ?? file.path)
    return FileStore(file: SharedFile(path: FilePath.resolve(relativePath, against: directory), durable: false, logger: .silent), watcher: watcher)
  }

  func read() throws(StoreError) -> StoredVersion? {
    try file.read().map(StoredVersion.init)
  }

  /// Only an identity seen ``identityRecurrenceWindow`` or more after the version's last
  /// change can vouch for it (``FileVersion/seenAt``).
  func provesUnchanged(_ identity: VersionIdentity) throws(StoreError) -> Bool {
    guard let version = identity.token(as: FileVersion.self),
      !version.identity.mayRecur(seenAt: version.seenAt, window: identityRecurrenceWindow)
    else { return false }
    return try file.identity() == version.identity
  }

  /// Under the exclusive lock: reads the file, asks `writer` for its plan, keeps an invalid
  /// version aside when asked (an empty file has nothing to keep), and replaces the file or,
  /// when the plan leaves it, makes the version read durable. The directory's `fsync` and
  /// closing the replaced version come after the lock is released (see ``AfterUnlock``) and
  /// before this returns.
  /// - Throws: ``StoreError`` (``StoreError/notDurable(path:_:)`` when the version is in place
  ///   but its durability is unknown), or what `writer` throws.
  func write(wait: ContentionWait, _ writer: some StoreWriter) throws {
    try file.withLockedFile(exclusive: true, wait: wait) { locked in
      let current = try locked.read().map(StoredVersion.init)
      switch try writer.plan(for: current) {
      case .abandon:
        return
      case .leave:
        locked.makeReadVersionDurable()
        writer.didLeave(current)
      case .replace(let bytes, let keepsInvalidCopy):
        if keepsInvalidCopy, let current, !current.bytes.isEmpty {
          try locked.preserveCorruptCopy(of: current.bytes)
        }
        let history = history(of: locked.target)
        // A history that cannot be kept does not stop the write; it is reported once the
        // write has succeeded (a write that fails reports its own failure alone).
        var historyProblem: SystemError?
        var pending: FileHistory.Pending?
        let replaced = current?.identity.token(as: FileVersion.self)?.identity
        do throws(SystemError) {
          pending = try history.keepReplaced(replaced)
        } catch {
          historyProblem = error
        }
        writer.willPublish(bytes)
        let identity: FileIdentity
        do {
          identity = try locked.replaceContents(with: bytes, keptByHistory: pending?.keptID != nil)
        } catch {
          if let pending { history.undo(pending) }
          writer.didNotPublish()
          throw error
        }
        if let pending {
          do throws(SystemError) {
            locked.afterUnlock.remove(try history.record(written: identity, note: writer.note, after: pending))
          } catch {
            historyProblem = error
          }
        }
        if let historyProblem { reportHistoryProblem(historyProblem, history) }
        writer.didPublish(VersionIdentity(FileVersion(identity)))
      }
    }
  }

  /// The history of the resolved file `target`.
  private func history(of target: String) -> FileHistory {
    // Compared byte for byte, as a path is (see ``SharedFile/atomicReplace(target:original:)``).
    if let last = lastHistory.withLock({ $0 }), last.target.hasSameBytes(as: target) { return last }
    let history = FileHistory(target: target)
    lastHistory.withLock { $0 = history }
    return history
  }

  /// Reports, once per folder and process, that the history could not be kept.
  private func reportHistoryProblem(_ error: SystemError, _ history: FileHistory) {
    if FileStore.historyFailuresReported.withLock({ $0.insert(history.folder).inserted }) {
      file.logger.log(.warning, "'\(file.path)': its history in '\(history.folder)' cannot be kept: \(error); the write went on without it")
    }
  }

  /// The history folders whose failure this process has reported.
  private static let historyFailuresReported = Protected<Set<String>>([])

  func watch(_ handler: @escaping @Sendable (ChangeHint) -> Void) -> any StoreWatch {
    watcher.watch(file.path) { reason in handler(ChangeHint(reason)) }
  }

  /// Any program may write the file in place; an empty file changed less than
  /// ``FollowGrace/empty`` ago is probably a writer between truncating and writing.
  func partialWrite() -> PartialWrite {
    guard let identity = (try? file.identity()) ?? nil else { return .possible }
    return FollowGrace.emptyGraceLeft(identity) == nil ? .possible : .likely
  }
}

extension StoredVersion {
  /// A file's snapshot as a stored version.
  init(_ snapshot: FileSnapshot) {
    self.init(bytes: snapshot.bytes, identity: VersionIdentity(FileVersion(snapshot.identity)))
  }
}

/// What a file store tells one version of its file by: its device, inode, size and times
/// (no order), and when this process saw them, since an identity may recur within one
/// timestamp tick of the version's last change (``FileIdentity/mayRecur(seenAt:window:)``):
/// ``FileStore/provesUnchanged(_:)`` trusts it only once it was seen long enough after. Two
/// are equal when their file identities are: when each was seen does not make another
/// version. `Sendable`.
struct FileVersion: VersionToken {
  /// The file's device, inode, size and times.
  var identity: FileIdentity
  /// When this process saw that identity (wall clock).
  var seenAt: FileIdentity.Timestamp

  /// `identity`, seen now.
  init(_ identity: FileIdentity, seenAt: FileIdentity.Timestamp = FileSystem.currentTime()) {
    self.identity = identity
    self.seenAt = seenAt
  }

  static func == (lhs: FileVersion, rhs: FileVersion) -> Bool { lhs.identity == rhs.identity }

  func hash(into hasher: inout Hasher) { hasher.combine(identity) }
}

extension ChangeHint {
  /// What a watcher's reason means for a reload. Every event naming the file compares
  /// contents, renames included: a file system may give a new version the inode an older one
  /// just freed, with the same size and (within one coarse timestamp tick) the same times, so
  /// after a missed version in between the identity alone can look unchanged. Only the
  /// periodic checks (polling, the safety re-check) trust the identity.
  init(_ reason: FileWatchReason) {
    switch reason {
    case .poll, .safetyRecheck: contentMayDiffer = reason.contentMayChangeInPlace
    default: contentMayDiffer = true
    }
    isRequestedRecheck = reason == .requested
    cause = .text(reason.description)
  }
}

extension FileWatch: StoreWatch {}
