import Glibc

extension Array where Element == UInt8 {
  /// Whether `other` holds exactly the same bytes.
  ///
  /// The generic `==` compares element by element, several instructions a byte: for a
  /// 100 KB document read by the watcher after every change that was about half a million
  /// instructions. The corresponding C function is `memcmp`.
  func hasSameBytes(as other: [UInt8]) -> Bool {
    guard count == other.count else { return false }
    guard count > 0 else { return true }
    return withUnsafeBufferPointer { mine in
      other.withUnsafeBufferPointer { theirs in memcmp(mine.baseAddress!, theirs.baseAddress!, mine.count) == 0 }
    }
  }
}

extension String {
  /// Whether `other` has exactly the same UTF-8 bytes (`==` compares Unicode text: it takes
  /// canonically equivalent strings, `"é"` and `"e\u{301}"`, for equal). No look at the bytes
  /// for two copies of one string; otherwise one `memcmp`.
  func hasSameBytes(as other: String) -> Bool {
    // The same representation is the same string: one buffer, or one small string's bytes.
    if unsafeBitCast(self, to: (UInt64, UInt64).self) == unsafeBitCast(other, to: (UInt64, UInt64).self) { return true }
    let count = utf8.count
    guard count == other.utf8.count else { return false }
    guard count > 0 else { return true }
    let compared: Bool?? = utf8.withContiguousStorageIfAvailable { mine in
      other.utf8.withContiguousStorageIfAvailable { theirs in
        mine.baseAddress == theirs.baseAddress || memcmp(mine.baseAddress!, theirs.baseAddress!, count) == 0
      }
    }
    if let compared, let compared { return compared }
    return utf8.elementsEqual(other.utf8)
  }
}
