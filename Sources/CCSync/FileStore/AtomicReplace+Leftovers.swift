import CCSyncSystem

/// Temp files left behind by writers killed mid-save (`kill -9`, a crash, a power cut):
/// readers and watchers never look at them, and the next writer removes them.
extension AtomicReplace {
  /// How old a leftover must be before it is removed. Every writer of the library holds the
  /// data file's exclusive lock while its temp file exists, and so does this one, so no
  /// temp file of a live writer can be here; the age (and the `flock` test below) guard
  /// against a caller of ``SharedFile/replaceContents(with:)`` that does not take the lock.
  static let leftoverMinimumAge: Int64 = 5

  /// Whether `entry` is a name this writer's protocol makes for a file called `name`:
  /// `.NAME.tmp-` and exactly ``suffixLength`` ASCII letters or digits; or the same for one
  /// of NAME's corrupt copies, `.NAME.corrupt-TIMESTAMP.tmp-XXXXXXXX` (a copy's name is never
  /// written again, so its leftover is swept with NAME's). Nothing else is ever removed.
  static func isTemporaryName(_ entry: String, forName name: String) -> Bool {
    if isTemporaryName(entry, forTarget: name) { return true }
    let copyPrefix = Array(("." + name + ".corrupt-").utf8)
    let bytes = Array(entry.utf8)
    let marker = Array(".tmp-".utf8)
    guard bytes.starts(with: copyPrefix), bytes.count >= copyPrefix.count + marker.count + suffixLength else { return false }
    let markerStart = bytes.count - suffixLength - marker.count
    guard Array(bytes[markerStart..<(markerStart + marker.count)]) == marker,
      bytes[(markerStart + marker.count)...].allSatisfy(isLetterOrDigit)
    else { return false }
    let stamp = bytes[copyPrefix.count..<markerStart]  // 20261130T103000.123Z, maybe -XXXX
    guard !stamp.isEmpty, stamp.allSatisfy({ isLetterOrDigit($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-") }) else {
      return false
    }
    return true
  }

  /// `.TARGET.tmp-` and exactly ``suffixLength`` ASCII letters or digits.
  private static func isTemporaryName(_ entry: String, forTarget target: String) -> Bool {
    let prefix = temporaryPrefix(forName: target)
    guard entry.hasPrefix(prefix) else { return false }
    let suffix = entry.utf8.dropFirst(prefix.utf8.count)
    return suffix.count == suffixLength && suffix.allSatisfy(isLetterOrDigit)
  }

  private static func isLetterOrDigit(_ byte: UInt8) -> Bool {
    (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
      || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
  }

  /// How often one process looks for one file's leftovers: listing the directory on every
  /// save cost a save in a directory of 1000 files twice its time (280 -> 590 us relaxed).
  /// The first write of a process always looks, so "the next writer removes them" holds for
  /// every new process, and a long-running writer removes them within this interval.
  static let leftoverSweepInterval: Duration = .seconds(10)

  /// When this process last looked for each file's leftovers, by target path.
  static let lastLeftoverSweeps = Protected<[String: ContinuousClock.Instant]>([:])

  /// Whether this process should look for the target's leftovers now (it has not within
  /// ``leftoverSweepInterval``; the answer `true` records the look as made), and when it
  /// should ask next: the interval after the last look.
  func claimLeftoverSweep(now: ContinuousClock.Instant) -> (isDue: Bool, nextDue: ContinuousClock.Instant) {
    AtomicReplace.lastLeftoverSweeps.withLock { sweeps in
      if let last = sweeps[target], now - last < AtomicReplace.leftoverSweepInterval {
        return (false, last + AtomicReplace.leftoverSweepInterval)
      }
      sweeps[target] = now
      return (true, now + AtomicReplace.leftoverSweepInterval)
    }
  }

  /// The entries of `directory` that may be temp files (a name starting with `.` and holding
  /// `.tmp-`), from a listing made within ``leftoverSweepInterval``, or from a new one: the
  /// first write of every file in a directory sweeps, and a process creating 1000 `key:`
  /// storages in one directory listed it 1000 times (2000 entries each, half the instructions
  /// of creating them). A leftover made after the listing is found by the next one, within
  /// two intervals.
  static func temporaryLookingEntries(of directory: String, now: ContinuousClock.Instant) -> [String]? {
    if let listing = directoryListings.withLock({ $0[directory] }), now - listing.listedAt < leftoverSweepInterval {
      return listing.entries
    }
    guard let entries = try? FileSystem.directoryEntries(directory) else { return nil }
    let candidates = entries.filter { $0.hasPrefix(".") && $0.contains(".tmp-") }
    directoryListings.withLock { $0[directory] = (now, candidates) }
    return candidates
  }

  /// The last listing of each directory swept: when, and its temp-looking entries.
  static let directoryListings = Protected<[String: (listedAt: ContinuousClock.Instant, entries: [String])]>([:])

  /// Removes the leftover temp files of `name` in `directory`: regular files (never a
  /// symlink, never followed), not modified for ``leftoverMinimumAge`` seconds, on which
  /// nobody holds a `flock` (a live writer keeps one on its temp file until it is renamed).
  /// Best effort: whatever cannot be inspected or removed (another user's file in a sticky
  /// directory) is left alone, and nothing here makes the save fail.
  func removeLeftoverTemporaryFiles(directory: String, name: String) {
    guard let entries = AtomicReplace.temporaryLookingEntries(of: directory, now: .now) else { return }
    let now = FileSystem.currentTime()
    for entry in entries where AtomicReplace.isTemporaryName(entry, forName: name) {
      let path = FilePath.join(directory, entry)
      guard let status = try? FileSystem.linkStatus(path), status.kind == .regularFile,
            now.seconds - status.identity.modificationTime.seconds >= AtomicReplace.leftoverMinimumAge,
            let file = try? OpenFile(path: path, options: .inspect)
      else { continue }
      defer { try? file.close() }
      guard let opened = try? file.status(), opened.kind == .regularFile,
            opened.identity.device == status.identity.device, opened.identity.inode == status.identity.inode,
            (try? file.lock(exclusive: true, nonBlocking: true)) == true
      else { continue }
      try? FileSystem.removeFile(path)
    }
  }
}
