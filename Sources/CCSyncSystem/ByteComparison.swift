import Glibc

extension Array where Element == UInt8 {
  /// Whether `other` holds exactly the same bytes.
  ///
  /// The generic `==` compares element by element, several instructions a byte: for a
  /// 100 KB document read by the watcher after every change that was about half a million
  /// instructions. The corresponding C function is `memcmp`.
  package func hasSameBytes(as other: [UInt8]) -> Bool {
    guard count == other.count else { return false }
    guard count > 0 else { return true }
    return withUnsafeBufferPointer { mine in
      other.withUnsafeBufferPointer { theirs in memcmp(mine.baseAddress!, theirs.baseAddress!, mine.count) == 0 }
    }
  }
}

/// How many bytes two buffers share at their start, then at their end (never overlapping in
/// the shorter one). Runs of 4 KB, then of 128 bytes, are compared with `memcmp`, then words,
/// then bytes: a 1 MB document that differs in one value costs a pass of `memcmp`, not a loop
/// over each word, and a 1 KB one (every locked write of a small file compares its text with
/// the last one known) a few calls instead of a hundred words each way.
package func commonByteEnds(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> (prefix: Int, suffix: Int) {
  let shorter = min(a.count, b.count)
  guard shorter > 0, let left = a.baseAddress, let right = b.baseAddress else { return (0, 0) }
  let run = 4096
  let shortRun = 128
  let word = MemoryLayout<UInt64>.size
  let leftRaw = UnsafeRawPointer(left)
  let rightRaw = UnsafeRawPointer(right)
  var prefix = 0
  while prefix + run <= shorter, memcmp(left + prefix, right + prefix, run) == 0 { prefix += run }
  while prefix + shortRun <= shorter, memcmp(left + prefix, right + prefix, shortRun) == 0 { prefix += shortRun }
  while prefix + word <= shorter,
    leftRaw.loadUnaligned(fromByteOffset: prefix, as: UInt64.self) == rightRaw.loadUnaligned(fromByteOffset: prefix, as: UInt64.self)
  {
    prefix += word
  }
  while prefix < shorter, left[prefix] == right[prefix] { prefix += 1 }
  let room = shorter - prefix
  var suffix = 0
  while suffix + run <= room, memcmp(left + a.count - suffix - run, right + b.count - suffix - run, run) == 0 { suffix += run }
  while suffix + shortRun <= room,
    memcmp(left + a.count - suffix - shortRun, right + b.count - suffix - shortRun, shortRun) == 0
  {
    suffix += shortRun
  }
  while suffix + word <= room,
    leftRaw.loadUnaligned(fromByteOffset: a.count - suffix - word, as: UInt64.self)
      == rightRaw.loadUnaligned(fromByteOffset: b.count - suffix - word, as: UInt64.self)
  {
    suffix += word
  }
  while suffix < room, left[a.count - suffix - 1] == right[b.count - suffix - 1] { suffix += 1 }
  return (prefix, suffix)
}

extension String {
  /// Whether `other` has exactly the same UTF-8 bytes (`==` compares Unicode text: it takes
  /// canonically equivalent strings, `"é"` and `"e\u{301}"`, for equal). No look at the bytes
  /// for two copies of one string; otherwise one `memcmp`.
  package func hasSameBytes(as other: String) -> Bool {
    // The same representation is the same string: one buffer, or one small string's bytes.
    let mine = unsafeBitCast(self, to: (UInt64, UInt64).self)
    let theirs = unsafeBitCast(other, to: (UInt64, UInt64).self)
    if mine == theirs { return true }
    // Two small strings (up to 15 UTF-8 bytes, held in the bits themselves: bit 61 of the
    // second word says so) are the same bytes only as the same bits: object keys mostly are,
    // and a key looked up among others of its length is told from them here.
    if mine.1 & theirs.1 & (1 << 61) != 0 { return false }
    let count = utf8.count
    guard count == other.utf8.count else { return false }
    guard count > 0 else { return true }
    let compared: Bool?? = utf8.withContiguousStorageIfAvailable { mine in
      other.utf8.withContiguousStorageIfAvailable { theirs in
        memcmp(mine.baseAddress!, theirs.baseAddress!, count) == 0
      }
    }
    if let compared, let compared { return compared }
    return utf8.elementsEqual(other.utf8)
  }
}
