import CCSyncSystem

/// A quick "certainly not there" test over the keys of an object being built: one bit per
/// key, chosen by its bytes. A key whose bit is clear is certainly new, which spares most
/// keys a scan of the keys so far.
///
/// Keys are equal when their UTF-8 bytes are (``ExactKey``), so equal keys have equal first
/// and last bytes and get the same bit.
package struct JSONKeyFilter {
  private var bits: UInt64 = 0

  /// An empty filter: no key is in it.
  package init() {}

  /// The bit of `key`, chosen by its first byte; computed once, passed to the other calls.
  /// (The last byte would sharpen the filter, but `utf8.last` costs more than it saves.)
  @inline(__always)
  package static func bit(of key: String) -> UInt64 {
    guard let first = key.utf8.first else { return 1 }
    return 1 << (first & 63)
  }

  /// The bit of a key given as its UTF-8 bytes, chosen by its first and last byte: sharper
  /// than ``bit(of:)`` when those bytes are at hand anyway. One filter takes bits of one
  /// kind only.
  @inline(__always)
  package static func bit(ofUTF8 bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
    guard let first = bytes.first, let last = bytes.last else { return 1 }
    return 1 << ((first &+ last &* 3) & 63)
  }

  /// Whether a key with this bit may be among those inserted.
  @inline(__always)
  package func mayContain(bit: UInt64) -> Bool {
    bits & bit != 0
  }

  /// Records a key with this bit.
  @inline(__always)
  package mutating func insert(bit: UInt64) {
    bits |= bit
  }
}
