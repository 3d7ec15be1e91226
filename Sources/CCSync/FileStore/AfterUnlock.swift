import CCSyncSystem
import Dispatch

/// What a write under the lock leaves for after the lock is released, so that other writers
/// waiting for the lock do not wait for it too:
///
/// - closing the descriptor of the version the write replaced: its last `close` frees the
///   replaced file, which a file system mounted with `discard` does synchronously;
/// - the directory's `fsync` that makes the rename durable (durable mode);
/// - the `fsync`s that make durable a version a durable commit left in place (nothing changed);
/// - removing the kept version the write pushed out of the history's window (its last link:
///   removing it frees the file, as the close above does without a history).
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
    /// Versions read and left in place by a durable commit, each `fsync`ed, then closed.
    var versionsToSynchronize: [(file: OpenFile, displayPath: String)] = []
    /// Directories whose `fsync` makes a rename durable, each with the path to name in errors.
    var directories: [(directory: String, displayPath: String)] = []
    /// Files to remove, last.
    var removals: [String] = []
  }

  private let pending = Protected(Work())

  /// Closes `file` once the lock is released.
  func close(_ file: OpenFile) {
    pending.withLock { $0.files.append(file) }
  }

  /// Removes the file at `path` once the lock is released (after the `fsync`s: its removal
  /// is no part of what they make durable); a file already gone is no error.
  func remove(_ path: String) {
    pending.withLock { $0.removals.append(path) }
  }

  /// Makes `renamed` durable once the lock is released.
  func makeDurable(_ renamed: AtomicReplace.Renamed) {
    guard let directory = renamed.directoryToSynchronize else { return }
    pending.withLock { $0.directories.append((directory, renamed.displayPath)) }
  }

  /// Makes the version `file` (opened by a read under the lock, and left in place) durable
  /// once the lock is released: its `fsync`, then its `directory`'s, which makes the rename
  /// that put it there durable. Closes `file`.
  ///
  /// A durable commit that finds nothing to change must still return only once the version
  /// it returns is durable: the writer that put it there may have died between its rename and
  /// its directory's `fsync`, had that `fsync` fail, or been relaxed.
  func makeDurable(version file: OpenFile, in directory: String, displayPath: String) {
    pending.withLock { work in
      work.versionsToSynchronize.append((file, displayPath))
      work.directories.append((directory, displayPath))
    }
  }

  /// Does what is pending: `fsync`s and closes the versions left in place, closes the files,
  /// then makes each rename durable (one `fsync` for directories in a row that are the same).
  /// Call it after the lock is released.
  /// - Throws: ``StoreError/notDurable(path:_:)`` for the first `fsync` that failed; the
  ///   others are still done.
  func run() throws(StoreError) {
    let work = pending.withLock { work in
      let taken = work
      work = Work()
      return taken
    }
    // With `fsync`s to wait for, the removals run beside them on another thread: freeing a
    // file is work for the processor (about 100 µs on ext4 with `discard`), an `fsync` mostly
    // a wait for the disk. Without (relaxed mode), they run on this thread at the end: there
    // is nothing to overlap, and the hand-over costs a wake-up and a wait.
    var overlapped: DispatchGroup?
    if !work.removals.isEmpty, !work.directories.isEmpty || !work.versionsToSynchronize.isEmpty {
      let (group, paths) = (DispatchGroup(), work.removals)
      DispatchQueue.global().async(group: group) {
        for path in paths { try? FileSystem.removeFile(path) }
      }
      overlapped = group
    }
    var firstFailure: StoreError?
    for (file, displayPath) in work.versionsToSynchronize {
      do {
        try file.synchronize()
      } catch {
        if firstFailure == nil { firstFailure = .notDurable(path: displayPath, error) }
      }
      try? file.close()
    }
    for file in work.files { try? file.close() }
    var previousDirectory: String?
    for (directory, displayPath) in work.directories where directory != previousDirectory {
      previousDirectory = directory
      do {
        try FileSystem.synchronizeDirectory(directory)
      } catch {
        if firstFailure == nil { firstFailure = .notDurable(path: displayPath, error) }
      }
    }
    if let overlapped {
      overlapped.wait()
    } else {
      for path in work.removals { try? FileSystem.removeFile(path) }
    }
    if let firstFailure { throw firstFailure }
  }
}
