@testable import CCSync
import CCSyncSystem

/// A mirror's conflict copies kept in memory (a second ``MirrorConflictCopies`` beside the
/// side-by-side one of `ccsync mirror`), named as the product names them.
///
/// `Sendable`: the copies are behind a `Protected`.
final class MemoryConflictCopies: MirrorConflictCopies {
  /// Each copy kept: what it is called and its text.
  let copies = Protected<[(name: String, text: String)]>([])
  private let fileName: String
  private let keyName: String

  init(fileName: String, keyName: String) {
    self.fileName = fileName
    self.keyName = keyName
  }

  func keepFileVersion(_ bytes: [UInt8]) throws(StorageError) -> String {
    keep(bytes, as: fileName + ".conflict-\(copies.withLock(\.count))")
  }

  func keepKeyVersion(_ bytes: [UInt8]) throws(StorageError) -> String {
    keep(bytes, as: keyName + ".conflict-\(copies.withLock(\.count))")
  }

  private func keep(_ bytes: [UInt8], as name: String) -> String {
    copies.withLock { $0.append((name, String(decoding: bytes, as: UTF8.self))) }
    return name
  }
}
