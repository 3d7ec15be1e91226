import CCSyncSystem

/// The members of a JSON object, in the order they were read or inserted.
///
/// Lookup by key is a linear scan for small objects and goes through a hash index once an
/// object has more than ``indexThreshold`` members, so both the typical 5-to-30-key settings
/// object and a 10000-key map stay fast. Keys are unique: setting an existing key replaces its
/// value in place, keeping its position.
///
/// Keys are compared by their exact UTF-8 bytes, as JSON compares them (``ExactKey``): `"é"`
/// written as one scalar and as `e` with a combining accent are two members, though Swift's
/// `String ==` takes them for one string. `Sendable`.
public struct JSONObject: Sendable, Hashable, RandomAccessCollection {
  /// One member of an object. Two members are equal when their keys have the same bytes and
  /// their values are equal.
  public struct Member: Sendable, Hashable {
    public var key: String
    public var value: JSONValue
    public init(key: String, value: JSONValue) {
      self.key = key
      self.value = value
    }

    public static func == (lhs: Member, rhs: Member) -> Bool {
      lhs.key.hasSameBytes(as: rhs.key) && lhs.value == rhs.value
    }

    /// Whether the two members are the same bits: the same key and the same value storage (a
    /// copy not changed since, as the members an update left alone are), which are then
    /// equal and print identically. Different bits say nothing (the slow comparison decides).
    package static func sameRepresentation(_ lhs: UnsafePointer<Member>, _ rhs: UnsafePointer<Member>) -> Bool {
      let left = UnsafeRawPointer(lhs)
      let right = UnsafeRawPointer(rhs)
      let size = MemoryLayout<Member>.size
      var offset = 0
      while offset + 8 <= size {
        guard left.loadUnaligned(fromByteOffset: offset, as: UInt64.self) == right.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
        else { return false }
        offset += 8
      }
      while offset < size {
        guard left.load(fromByteOffset: offset, as: UInt8.self) == right.load(fromByteOffset: offset, as: UInt8.self) else { return false }
        offset += 1
      }
      return true
    }
  }

  /// Objects with more members than this keep a key-to-position index. Below it a scan is
  /// cheaper than hashing: building the index cost the parser a sixth of its time on
  /// 15-member objects at a threshold of 12.
  package static let indexThreshold = 32

  public private(set) var members: [Member]
  private var index: [ExactKey: Int]?

  /// An empty object.
  public init() {
    members = []
  }

  /// Creates an object from key-value pairs; a repeated key keeps its first position and its
  /// last value.
  public init<Pairs: Sequence<(String, JSONValue)>>(_ pairs: Pairs) {
    members = []
    for (key, value) in pairs { self[key] = value }
  }

  /// Creates an object from an array of key-value pairs, as ``init(_:)-(Pairs)`` does. Not
  /// generic, so a call from another module needs no run-time lookup of `Pairs`'s
  /// associated types, which cost an etcd request's first object more than building it.
  public init(_ pairs: [(String, JSONValue)]) {
    members = []
    members.reserveCapacity(pairs.count)
    for (key, value) in pairs { self[key] = value }
  }

  /// Creates an object from members the caller guarantees to have unique keys (the parser
  /// does). Builds the index when the object is large.
  package init(uniqueMembers: [Member]) {
    self.init(uniqueMembers: uniqueMembers, index: nil)
  }

  /// Creates an object from members with unique keys and, for a large one, the key-to-position
  /// `index` when the caller already built it (``ObjectBuffer`` does).
  package init(uniqueMembers: [Member], index: [ExactKey: Int]?) {
    members = uniqueMembers
    guard members.count > JSONObject.indexThreshold else { return }
    if let index { self.index = index } else { rebuildIndex() }
  }

  public var startIndex: Int { members.startIndex }
  public var endIndex: Int { members.endIndex }
  public subscript(position: Int) -> Member { members[position] }

  /// The keys in order.
  public var keys: [String] { members.map(\.key) }

  /// The position of the member whose key has the bytes of `key`, or `nil` when the object
  /// has no such member.
  public func position(of key: String) -> Int? {
    if let index { return index[ExactKey(key)] }
    for position in members.indices where members[position].key.hasSameBytes(as: key) { return position }
    return nil
  }

  /// The value for `key`; setting `nil` removes the member, setting a value for a new key
  /// appends it, for an existing key replaces the value where it stands.
  public subscript(key: String) -> JSONValue? {
    get {
      guard let position = position(of: key) else { return nil }
      return members[position].value
    }
    set {
      if let newValue {
        if let position = position(of: key) {
          members[position].value = newValue
        } else {
          members.append(Member(key: key, value: newValue))
          if index != nil {
            index![ExactKey(key)] = members.count - 1
          } else if members.count > JSONObject.indexThreshold {
            rebuildIndex()
          }
        }
      } else {
        removeValue(forKey: key)
      }
    }
  }

  /// Runs `body` on the value of the member at `position`, changing it in place (a value taken
  /// out and put back would be copied: the object would still hold a reference to it).
  package mutating func modifyValue<Result, Failure: Error>(
    at position: Int, _ body: (inout JSONValue) throws(Failure) -> Result
  ) throws(Failure) -> Result {
    try body(&members[position].value)
  }

  /// Removes the member for `key` and returns its value, or `nil` when there was none.
  @discardableResult
  public mutating func removeValue(forKey key: String) -> JSONValue? {
    guard let position = position(of: key) else { return nil }
    let removed = members.remove(at: position)
    if index != nil {
      if members.count > JSONObject.indexThreshold { rebuildIndex() } else { index = nil }
    }
    return removed.value
  }

  private mutating func rebuildIndex() {
    index = JSONObject.keyIndex(of: members, room: members.count)
  }

  /// Each key's position in `members`, for an object too big for a linear scan (also used by
  /// the encoder's ``ObjectBuffer`` while it builds one, with room to grow), with room for
  /// `room` keys.
  package static func keyIndex(of members: [Member], room: Int) -> [ExactKey: Int] {
    var index = [ExactKey: Int](minimumCapacity: room)
    for (position, member) in members.enumerated() { index[ExactKey(member.key)] = position }
    return index
  }

  /// Equal when both have the same keys with equal values, in any order.
  ///
  /// Fast paths for the common case, an edited copy compared with its original (does this
  /// update change anything?): members still sharing one buffer are equal without a look,
  /// and members in the same order compare pairwise, without a lookup by key.
  public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
    let count = lhs.members.count
    guard count == rhs.members.count else { return false }
    if lhs.sharesMembers(with: rhs) { return true }
    var position = 0
    let unequal: Bool = lhs.members.withUnsafeBufferPointer { left in
      rhs.members.withUnsafeBufferPointer { right in
        while position < count {
          // A member copied unchanged is the same bits: equal without a look inside.
          if Member.sameRepresentation(left.baseAddress! + position, right.baseAddress! + position) {
            position += 1
            continue
          }
          guard left[position].key.hasSameBytes(as: right[position].key) else { return false }
          guard left[position].value == right[position].value else { return true }
          position += 1
        }
        return false
      }
    }
    if unequal { return false }
    // Keys are unique, so the members matched in order are not looked up again.
    for member in lhs.members[position...] {
      guard let other = rhs[member.key], other == member.value else { return false }
    }
    return true
  }

  /// Whether both hold the very same members buffer (a copy not yet changed).
  private func sharesMembers(with other: JSONObject) -> Bool {
    members.withUnsafeBufferPointer { mine in
      other.members.withUnsafeBufferPointer { theirs in mine.baseAddress == theirs.baseAddress }
    }
  }

  /// Order-independent, to agree with `==`.
  public func hash(into hasher: inout Hasher) {
    var combined = 0
    for member in members { combined ^= member.hashValue }
    hasher.combine(members.count)
    hasher.combine(combined)
  }
}
