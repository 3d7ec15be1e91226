import Glibc

/// One record read from an inotify descriptor.
package struct InotifyEvent: Equatable, Sendable {
  /// The watch descriptor the event is for; -1 for `IN_Q_OVERFLOW`.
  package var watch: Int32
  /// What happened: `IN_CREATE`, `IN_MOVED_TO`... plus flags such as `IN_ISDIR`.
  package var mask: UInt32
  /// Pairs an `IN_MOVED_FROM` with its `IN_MOVED_TO`.
  package var cookie: UInt32
  /// The entry in the watched directory the event names; empty for events on the
  /// directory itself.
  package var name: String

  /// Whether `mask` contains any of `flags`.
  package func has(_ flags: UInt32) -> Bool { mask & flags != 0 }
}

/// The inotify event bits, as `UInt32` (Glibc imports them with mixed integer types).
package enum InotifyMask {
  package static let modify = UInt32(IN_MODIFY)
  package static let attributes = UInt32(IN_ATTRIB)
  package static let closeWrite = UInt32(IN_CLOSE_WRITE)
  package static let movedFrom = UInt32(IN_MOVED_FROM)
  package static let movedTo = UInt32(IN_MOVED_TO)
  package static let create = UInt32(IN_CREATE)
  package static let delete = UInt32(IN_DELETE)
  package static let deleteSelf = UInt32(IN_DELETE_SELF)
  package static let moveSelf = UInt32(IN_MOVE_SELF)
  package static let overflow = UInt32(IN_Q_OVERFLOW)
  package static let ignored = UInt32(IN_IGNORED)
  package static let isDirectory = UInt32(bitPattern: IN_ISDIR)
  package static let onlyDirectory = UInt32(IN_ONLYDIR)
  package static let excludeUnlinked = UInt32(IN_EXCL_UNLINK)

  /// What a directory watch asks for: every change to an entry, and the directory itself
  /// going away. `IN_ONLYDIR` makes a path that is no longer a directory fail with `ENOTDIR`.
  package static let directoryWatch: UInt32 = create | delete | movedFrom | movedTo | closeWrite
    | modify | attributes | deleteSelf | moveSelf | onlyDirectory | excludeUnlinked
  /// Events that change which inode a name leads to.
  package static let nameChanged: UInt32 = create | delete | movedFrom | movedTo
  /// Events that change a file's bytes without changing its inode.
  package static let inPlaceWrite: UInt32 = modify | closeWrite
}

/// An owned inotify descriptor, opened close-on-exec and non-blocking.
///
/// Not `Sendable`: the watcher keeps it behind its state lock.
package final class InotifyInstance {
  /// The descriptor, for `poll(2)`.
  package let descriptor: Int32
  /// Reused by every `readEvents`: allocating and zeroing 64 KiB per wake-up showed up in
  /// the watcher's CPU time under a stream of events.
  private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65536, alignment: 8)

  /// Opens a new inotify instance.
  /// - Throws: `SystemError`: `EMFILE` when `fs.inotify.max_user_instances` (or the process's
  ///   descriptor limit) is reached, `ENOSYS` where the kernel has no inotify.
  /// The corresponding C function is `inotify_init1`.
  package init() throws(SystemError) {
    descriptor = try systemCall("inotify_init1") { inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK)) }
  }

  deinit {
    close(descriptor)
    buffer.deallocate()
  }

  /// Starts watching `directory` with `mask`; returns the watch descriptor. The kernel gives
  /// the same descriptor back for the same inode, and replaces its mask.
  /// - Throws: `SystemError`: `ENOSPC` when `fs.inotify.max_user_watches` is reached,
  ///   `ENOENT`/`ENOTDIR` when the directory is gone, `EACCES` when it is not readable.
  /// The corresponding C function is `inotify_add_watch`.
  package func addWatch(_ directory: String, mask: UInt32) throws(SystemError) -> Int32 {
    try systemCall("inotify_add_watch", path: directory) {
      inotify_add_watch(descriptor, directory, mask)
    }
  }

  /// Stops a watch. The kernel then queues an `IN_IGNORED` event for it.
  /// - Throws: `SystemError` (`EINVAL` when the kernel already dropped the watch because its
  ///   directory was deleted; no second `IN_IGNORED` comes then).
  /// The corresponding C function is `inotify_rm_watch`.
  package func removeWatch(_ watch: Int32) throws(SystemError) {
    _ = try systemCall("inotify_rm_watch") { inotify_rm_watch(descriptor, watch) }
  }

  /// Reads every event queued now, at most `limit` buffers of 64 KiB; returns an empty array
  /// when nothing is queued (the descriptor is non-blocking).
  /// The corresponding C function is `read`.
  package func readEvents(limit: Int = 64) throws(SystemError) -> [InotifyEvent] {
    var events: [InotifyEvent] = []
    for _ in 0..<limit {
      let count: Int
      do {
        count = try systemCall("read inotify events") { read(descriptor, buffer.baseAddress, buffer.count) }
      } catch where error.code == EAGAIN || error.code == EWOULDBLOCK {
        break
      }
      if count == 0 { break }
      events += InotifyInstance.parse(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
      // A read that left room for another full record took everything queued: skip the
      // read that would only say EAGAIN.
      if count < buffer.count - MemoryLayout<inotify_event>.size - Int(NAME_MAX) - 1 { break }
    }
    return events
  }

  /// Splits the bytes of one `read` into events. Each record is a fixed `inotify_event`
  /// header (16 bytes) then `len` bytes of name padded with NULs; a record that would run past
  /// the end of the bytes ends the parse instead of reading beyond them.
  package static func parse(_ bytes: UnsafeRawBufferPointer) -> [InotifyEvent] {
    let headerSize = MemoryLayout<inotify_event>.size
    var events: [InotifyEvent] = []
    var offset = 0
    while offset + headerSize <= bytes.count {
      let watch = bytes.loadUnaligned(fromByteOffset: offset, as: Int32.self)
      let mask = bytes.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)
      let cookie = bytes.loadUnaligned(fromByteOffset: offset + 8, as: UInt32.self)
      let length = Int(bytes.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
      let nameStart = offset + headerSize
      guard length <= bytes.count - nameStart else { break }
      let nameBytes = bytes[nameStart..<nameStart + length]
      let nameEnd = nameBytes.firstIndex(of: 0) ?? nameBytes.endIndex
      let name = String(decoding: bytes[nameStart..<nameEnd], as: UTF8.self)
      events.append(InotifyEvent(watch: watch, mask: mask, cookie: cookie, name: name))
      offset = nameStart + length
    }
    return events
  }
}

/// What an inotify failure means to the watcher.
extension SystemError {
  /// `inotify_add_watch` found no directory there any more (`ENOENT`, `ENOTDIR`).
  package var isVanishedDirectory: Bool { code == ENOENT || code == ENOTDIR }
  /// `fs.inotify.max_user_watches` is reached (`ENOSPC` from `inotify_add_watch`).
  package var isInotifyWatchLimit: Bool { operation == "inotify_add_watch" && code == ENOSPC }
  /// `fs.inotify.max_user_instances`, or the descriptor limit, is reached (`EMFILE` from
  /// `inotify_init1`).
  package var isInotifyInstanceLimit: Bool { operation == "inotify_init1" && code == EMFILE }

  /// The error `inotify_add_watch` gives when `fs.inotify.max_user_watches` is reached.
  package static func inotifyWatchLimit(path: String) -> SystemError {
    SystemError(code: ENOSPC, operation: "inotify_add_watch", path: path)
  }
}
