import CCSyncSystem

/// A file's history, read: the versions in `.NAME.history/` and the current one.
extension FileStore {
  func versions(limit: Int?) throws(StoreError) -> [DocumentVersion] {
    let history = FileHistory(target: try file.resolvedPath())
    let entries = history.entries()
    let current = try file.identity()
    var versions: [DocumentVersion] = []
    var newest = entries.count - 1
    if let current {
      if let last = entries.last, last.inode == current.inode, last.device == current.device {
        versions.append(DocumentVersion(entry: last, isCurrent: true))
        newest -= 1
      } else {
        // Written by a program that is not ccsync: it gets its id when a write keeps it.
        versions.append(DocumentVersion(
          id: String((entries.last?.id ?? 0) + 1), time: FileSystem.isoTimestamp(current.modificationTime), author: nil,
          rollbackOf: nil, isCurrent: true))
      }
    }
    var index = newest
    while index >= 0, versions.count < (limit ?? Int.max) {
      let entry = entries[index]
      if history.isKept(entry) {
        versions.append(DocumentVersion(entry: entry, isCurrent: false))
      }
      index -= 1
    }
    return Array(versions.prefix(limit ?? Int.max))
  }

  func contents(ofVersion id: String) throws(StoreError) -> [UInt8]? {
    guard let number = Int(id) else { return nil }
    if let current = try versions(limit: 1).first, current.id == id { return try file.read()?.bytes }
    let history = FileHistory(target: try file.resolvedPath())
    guard let entry = history.entries().last(where: { $0.id == number }), history.isKept(entry) else { return nil }
    return try SharedFile(path: history.versionPath(number), durable: false, logger: .silent).read()?.bytes
  }

  func setHistoryLimit(_ count: Int) throws(StoreError) {
    let history = FileHistory(target: try file.resolvedPath())
    do {
      try history.setKeep(count)
    } catch {
      throw .system(error)
    }
  }
}

extension DocumentVersion {
  /// A version as a file's history recorded it.
  init(entry: FileHistory.Entry, isCurrent: Bool) {
    self.init(id: String(entry.id), time: entry.time, author: entry.author, rollbackOf: entry.rollbackOf, isCurrent: isCurrent)
  }
}
