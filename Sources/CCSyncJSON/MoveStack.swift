import CCSyncSystem

/// A stack in manually managed memory whose top elements can be moved out into an `Array` in
/// one go, without the retain and release that copying them would cost.
///
/// The parser keeps the elements of all open arrays (and the members of all open objects) on
/// one such stack and moves an array's elements out when it closes, so building a value costs
/// one move per element and no per-container growth.
package struct MoveStack<Element>: ~Copyable {
  private var base: UnsafeMutablePointer<Element>
  private var capacity: Int
  /// The number of elements on the stack.
  package private(set) var count = 0

  package init(initialCapacity: Int = 64) {
    capacity = max(1, initialCapacity)
    base = .allocate(capacity: capacity)
  }

  deinit {
    base.deinitialize(count: count)
    base.deallocate()
  }

  @inline(__always)
  package mutating func push(_ element: consuming Element) {
    if count == capacity { grow() }
    (base + count).initialize(to: element)
    count += 1
  }

  /// The element at `index`, which must be below ``count``.
  @inline(__always)
  package subscript(index: Int) -> Element {
    _read { yield base[index] }
    _modify { yield &base[index] }
  }

  /// The top element; the stack must not be empty.
  @inline(__always)
  package var top: Element {
    _read { yield base[count - 1] }
    _modify { yield &base[count - 1] }
  }

  /// Removes and returns the top element; the stack must not be empty.
  @inline(__always)
  package mutating func pop() -> Element {
    count -= 1
    return (base + count).move()
  }

  /// Moves the elements from `start` to the top into a new array, leaving `start` elements.
  package mutating func popArray(from start: Int) -> [Element] {
    let moved = count - start
    guard moved > 0 else { return [] }
    // Not `Array(unsafeUninitializedCapacity:)`: that calls an unspecialized runtime entry
    // point which looks up the array's type metadata on every call (a tenth of all parse
    // time). `append(contentsOf:)` is specialized here and moves each element once.
    var array: [Element] = []
    array.append(contentsOf: MovingElements(current: base + start, end: base + count))
    count = start
    return array
  }

  /// Removes the elements from `start` to the top.
  package mutating func removeAll(from start: Int) {
    (base + start).deinitialize(count: count - start)
    count = start
  }

  private mutating func grow() {
    let newCapacity = capacity * 2
    let newBase = UnsafeMutablePointer<Element>.allocate(capacity: newCapacity)
    newBase.moveInitialize(from: base, count: count)
    base.deallocate()
    base = newBase
    capacity = newCapacity
  }
}

/// Initialized memory read once, front to back, by moving each element out. Whoever iterates
/// it must run it to the end (``MoveStack/popArray(from:)`` does), or elements leak.
package struct MovingElements<Element>: Sequence, IteratorProtocol {
  package var current: UnsafeMutablePointer<Element>
  package let end: UnsafeMutablePointer<Element>

  package var underestimatedCount: Int { end - current }

  @inline(__always)
  package mutating func next() -> Element? {
    guard current < end else { return nil }
    let element = current.move()
    current += 1
    return element
  }
}
