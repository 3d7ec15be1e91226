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
