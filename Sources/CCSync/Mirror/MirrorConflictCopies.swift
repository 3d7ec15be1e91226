import CCSyncSystem

/// Where a mirror's first meeting keeps the version that lost (docs/SEMANTICS.md, "Mirror":
/// both sides exist, differ and have no common history): the seam between the sync logic and
/// the places copies go. ``SideBySideConflictCopies`` puts them beside the file and the key
/// for `ccsync mirror`; the tests keep them in memory. `Sendable`.
protocol MirrorConflictCopies: Sendable {
  /// Keeps `bytes`, the file's version that the key's replaces; returns what the copy is
  /// called (for the line that names it).
  func keepFileVersion(_ bytes: [UInt8]) throws(StorageError) -> String

  /// Keeps `bytes`, the key's version that the file's replaces; returns what the copy is called.
  func keepKeyVersion(_ bytes: [UInt8]) throws(StorageError) -> String
}

/// The conflict copies of `ccsync mirror`: the file's version as `FILE.conflict-TIMESTAMP`
/// beside the file (``SharedFile/keepCopy(of:label:)``), the key's as the key
/// `KEY.conflict-TIMESTAMP` beside the key. `Sendable`: immutable.
struct SideBySideConflictCopies: MirrorConflictCopies {
  let file: SharedFile
  let location: EtcdLocation

  func keepFileVersion(_ bytes: [UInt8]) throws(StorageError) -> String {
    try storeCall { () throws(StoreError) in try file.keepCopy(of: bytes, label: "conflict") }
  }

  func keepKeyVersion(_ bytes: [UInt8]) throws(StorageError) -> String {
    // Another machine's first meeting may pick the same name in the same millisecond: a
    // name already taken gets a random suffix, as a file's copy does.
    var copyLocation = location
    copyLocation.key += ".conflict-" + FileSystem.utcTimestampForFileName()
    while try !storeCall({ () throws(StoreError) in try copyLocation.putIfAbsent(bytes) }) {
      copyLocation.key = location.key + ".conflict-" + FileSystem.utcTimestampForFileName() + "-" + FileSystem.randomSuffix(length: 4)
    }
    return copyLocation.key
  }
}
