/// What a write under the lock leaves for after the lock is released, so that other writers
/// waiting for the lock do not wait for it too:
///
/// - closing the descriptor of the version the write replaced: its last `close` frees the
///   replaced file, which a file system mounted with `discard` does synchronously;
/// - the directory's `fsync` that makes the rename durable (durable mode).
///
/// Releasing the lock before the directory's `fsync` keeps every guarantee a writer gives:
/// its call still returns only once its version is durable, and the next writer, which may
/// read that version before it is, writes a version that contains it, with its own file
/// `fsync` before its own rename. After a crash the file holds the last durable version or any
/// later one, never a version with an earlier one's change missing. What a process outside
/// ccsync reads without the lock (it may see a version not yet durable) is as it always was:
/// a rename is visible before the directory's `fsync` ends.
///
/// `Sendable`: its state is only touched under `pending`'s lock, and ``run()`` takes it.
final class AfterUnlock: Sendable {
  private struct Work {
    var files: [OpenFile] = []
    var renames: [AtomicReplace.Renamed] = []
  }

  private let pending = Protected(Work())

  /// Closes `file` once the lock is released.
  func close(_ file: OpenFile) {
    pending.withLock { $0.files.append(file) }
  }

  /// Makes `renamed` durable once the lock is released.
  func makeDurable(_ renamed: AtomicReplace.Renamed) {
    pending.withLock { $0.renames.append(renamed) }
  }

  /// Does what is pending: closes the files, then makes each rename durable (one `fsync` for
  /// renames in a row into the same directory). Call it after the lock is released.
  /// - Throws: ``StorageError/notDurable(path:_:)`` for the first directory whose `fsync`
  ///   failed; the others are still synchronized.
  func run() throws(StorageError) {
    let work = pending.withLock { work in
      let taken = work
      work = Work()
      return taken
    }
    for file in work.files { try? file.close() }
    var previousDirectory: String?
    var firstFailure: StorageError?
    for renamed in work.renames where renamed.directoryToSynchronize != previousDirectory {
      previousDirectory = renamed.directoryToSynchronize
      do {
        try renamed.makeDurable()
      } catch {
        if firstFailure == nil { firstFailure = error }
      }
    }
    if let firstFailure { throw firstFailure }
  }
}
