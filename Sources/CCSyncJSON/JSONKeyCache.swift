import CCSyncSystem

/// The object keys one parse has already turned into `String`s, so that a key read again
/// (every service entry of a config repeats the same keys) is a table lookup and a byte
/// comparison instead of a new string, and a long key shares one string buffer.
///
/// A table of ``slotCount`` slots indexed by the key's fingerprint, looked up in a run of
/// ``probeCount`` slots; a new key takes the first empty slot of its run, or else replaces the
/// first one. Each slot remembers where in the input its key's bytes are, so a hit is
/// confirmed by comparing bytes, never by fingerprint alone. Only keys without escapes are
/// cached (their bytes in the input are their UTF-8).
///
/// Inputs under ``minimumInputSize`` get no table: setting one up and tearing it down cost a
/// third of the parse of a 1 KB document, which has too few keys to repeat any.
package struct JSONKeyCache: ~Copyable {
  package struct Slot {
    package var fingerprint: UInt64 = 0
    /// Where the key's bytes start in the input; `-1` while the slot is empty.
    package var offset: Int32 = -1
    package var length: Int32 = 0
    package var key = ""
  }

  package static let slotCount = 256
  package static let probeCount = 4
  package static let minimumInputSize = 4096

  /// `nil` when the input is too small to be worth a table.
  private let slots: UnsafeMutablePointer<Slot>?

  /// A cache for parsing an input of `inputSize` bytes.
  package init(inputSize: Int) {
    guard inputSize >= JSONKeyCache.minimumInputSize else {
      slots = nil
      return
    }
    // `probeCount - 1` extra slots at the end, so a run never wraps around.
    let slots = UnsafeMutablePointer<Slot>.allocate(capacity: JSONKeyCache.slotCount + JSONKeyCache.probeCount - 1)
    slots.initialize(repeating: Slot(), count: JSONKeyCache.slotCount + JSONKeyCache.probeCount - 1)
    self.slots = slots
  }

  deinit {
    guard let slots else { return }
    slots.deinitialize(count: JSONKeyCache.slotCount + JSONKeyCache.probeCount - 1)
    slots.deallocate()
  }

  /// The first slot of the run for `fingerprint`.
  @inline(__always)
  private func run(_ fingerprint: UInt64, in slots: UnsafeMutablePointer<Slot>) -> UnsafeMutablePointer<Slot> {
    slots + Int(truncatingIfNeeded: fingerprint & UInt64(JSONKeyCache.slotCount - 1))
  }

  /// The cached key with these bytes, if there is one.
  @inline(__always)
  package func key(fingerprint: UInt64, content: UnsafeBufferPointer<UInt8>, in input: UnsafeBufferPointer<UInt8>) -> String? {
    guard let slots else { return nil }
    var slot = run(fingerprint, in: slots)
    for _ in 0..<JSONKeyCache.probeCount {
      if slot.pointee.fingerprint == fingerprint, Int(slot.pointee.length) == content.count, slot.pointee.offset >= 0,
        JSONKeyCache.equalBytes(input.baseAddress! + Int(slot.pointee.offset), content.baseAddress, content.count)
      {
        return slot.pointee.key
      }
      slot += 1
    }
    return nil
  }

  /// Remembers `key`, whose bytes are `content`, a slice of `input`. Inputs beyond 2 GiB are
  /// not cached past that offset.
  package func insert(_ key: String, fingerprint: UInt64, content: UnsafeBufferPointer<UInt8>, in input: UnsafeBufferPointer<UInt8>) {
    guard let slots, let start = content.baseAddress, let offset = Int32(exactly: start - input.baseAddress!),
      let length = Int32(exactly: content.count)
    else { return }
    let first = run(fingerprint, in: slots)
    var slot = first
    for _ in 0..<JSONKeyCache.probeCount {
      if slot.pointee.offset < 0 { break }
      slot += 1
    }
    if slot == first + JSONKeyCache.probeCount { slot = first }
    slot.pointee = Slot(fingerprint: fingerprint, offset: offset, length: length, key: key)
  }
  /// Whether `count` bytes at `lhs` and `rhs` are equal, eight at a time.
  @inline(__always)
  package static func equalBytes(_ lhs: UnsafePointer<UInt8>, _ rhs: UnsafePointer<UInt8>?, _ count: Int) -> Bool {
    guard let rhs else { return count == 0 }
    let left = UnsafeRawPointer(lhs)
    let right = UnsafeRawPointer(rhs)
    var index = 0
    while index + 8 <= count {
      if left.loadUnaligned(fromByteOffset: index, as: UInt64.self)
        != right.loadUnaligned(fromByteOffset: index, as: UInt64.self)
      {
        return false
      }
      index += 8
    }
    while index < count {
      if lhs[index] != rhs[index] { return false }
      index += 1
    }
    return true
  }
}
