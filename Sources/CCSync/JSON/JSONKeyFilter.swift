/// A quick "certainly not there" test over the keys of an object being built: one bit per
/// key, chosen by its first byte. A key whose bit is clear is certainly new, which spares most
/// keys a scan of the keys so far.
///
/// Keys are equal under `String ==`, that is when canonically equivalent, which can hold
/// between different bytes. But an ASCII character is a starter that decomposes to itself, so
/// the canonical decomposition of a string that begins with an ASCII byte begins with that
/// byte: two equal keys whose first bytes are ASCII have the same first byte. Keys that are
/// empty or begin with a non-ASCII byte get no bit, and once one is in, the filter rules
/// nothing out. (The last byte would sharpen the filter by the same argument, but `utf8.last`
/// costs more than it saves.)
struct JSONKeyFilter {
  private var bits: UInt64 = 0
  private var incomplete = false

  /// The bit of `key`, or `nil` when it has none; computed once, passed to the other calls.
  @inline(__always)
  static func bit(of key: String) -> UInt64? {
    guard let first = key.utf8.first, first < 0x80 else { return nil }
    return 1 << (first & 63)
  }

  /// The bit of a key given as its UTF-8 bytes, chosen by its first and last byte: sharper
  /// than ``bit(of:)`` when those bytes are at hand anyway. A key whose first or last byte is
  /// not ASCII gets none (a non-ASCII last character can be canonically equivalent to an ASCII
  /// one: U+037E GREEK QUESTION MARK is `;`). One filter takes bits of one kind only.
  @inline(__always)
  static func bit(ofUTF8 bytes: UnsafeBufferPointer<UInt8>) -> UInt64? {
    guard let first = bytes.first, let last = bytes.last, first < 0x80, last < 0x80 else { return nil }
    return 1 << ((first &+ last &* 3) & 63)
  }

  /// Whether a key with this bit may be among those inserted.
  @inline(__always)
  func mayContain(bit: UInt64?) -> Bool {
    guard !incomplete, let bit else { return true }
    return bits & bit != 0
  }

  /// Records a key with this bit.
  @inline(__always)
  mutating func insert(bit: UInt64?) {
    if let bit { bits |= bit } else { incomplete = true }
  }
}
