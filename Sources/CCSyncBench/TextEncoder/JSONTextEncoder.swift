import CCSyncSystem
import CCSyncJSON
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension JSONValueEncoder {
  /// Encodes `value` straight to UTF-8 JSON text: the same bytes as
  /// `encode(value).formattedBytes(style)`, without building the ``JSONValue`` tree in between.
  ///
  /// The text is written in one pass as the value's `encode(to:)` runs. The few encodings that
  /// do not fit one pass (writing to a container after one of its later siblings was started,
  /// encoding a key twice, a super encoder) and every error are handed to ``encode(_:)``, the
  /// tree encoder, so the bytes and the errors are always exactly the tree encoder's.
  /// Dictionaries go through the tree on their own (their members are sorted by key).
  /// - Parameters:
  ///   - value: the value to encode.
  ///   - style: ``JSONFormat/compact`` (the default, as Foundation's `JSONEncoder`) or
  ///     ``JSONFormat/pretty``.
  /// - Returns: the JSON text.
  /// - Throws: what ``encode(_:)`` throws.
  public func encodeBytes<T: Encodable>(_ value: T, style: JSONFormat = .compact) throws -> [UInt8] {
    if let bytes = JSONTextEncoderImpl.encode(value, options: self, style: style) { return bytes }
    return try encode(value).formattedBytes(style)
  }
}

/// The one-pass text encoder behind ``JSONValueEncoder/encodeBytes(_:style:)``.
///
/// Containers being written are a stack of frames. A container keeps the position and token
/// of its frame; writing through it closes the frames above (nested containers it started
/// earlier are finished by then in any single-pass encoding), and a container whose frame is
/// gone, or any other use that one pass cannot honour, abandons the attempt: the caller then
/// encodes through the tree. The common leaves are written here in the bytes the tree would
/// print for them (``writePlainLeaf(_:step:)``); other leaves and dictionaries are made by
/// the tree encoder's own code (``JSONValueEncoderImpl``), so strategies and errors are its.
///
/// The coding path is a stack of steps beside the frames (see ``steps``): going down into a
/// nested value pushes one step, with no allocation, and the `[CodingKey]` array is built
/// only when someone asks for it.
///
/// One instance serves one call on one thread; its properties skip exclusivity checks, and
/// no access to them is held across a call out to other code.
final class JSONTextEncoderImpl: Encoder, SingleValueEncodingContainer {
  /// Raised to give up the single pass; never seen outside.
  struct Abandon: Error {}

  /// An open container.
  struct Frame {
    let token: UInt32
    let isObject: Bool
    /// Members or elements written so far.
    var count = 0
    /// Where this object's keys start in ``JSONTextEncoderImpl/writtenKeys``.
    let firstKey: Int
    /// Rules out, for most new keys, that the object has them already.
    var keyFilter = JSONKeyFilter()
    /// How many ``JSONTextEncoderImpl/steps`` to keep when this frame closes: a nested
    /// container pushed the step to its place, and takes it off with it.
    let stepBase: Int
  }

  let tree: JSONValueEncoderImpl
  @exclusivity(unchecked) var printer: JSONPrinter
  @exclusivity(unchecked) var frames = MoveStack<Frame>(initialCapacity: 16)
  /// The keys written so far in the open objects, each object's after its parent's (one
  /// stack for all, so an object costs no allocation of its own), to refuse a key written
  /// twice. A key is kept as the place of its text in the output, which costs no reference
  /// count and is compared only when the object's key filter cannot rule it out.
  @exclusivity(unchecked) var writtenKeys = MoveStack<WrittenKey>(initialCapacity: 64)
  @exclusivity(unchecked) private var nextToken: UInt32 = 0
  /// The coding path down to the innermost value or container being written, one step per
  /// level. A container's path is the first ``JSONTextKeyedEncodingContainer/pathDepth``
  /// steps, which stay as they are while its frame is open.
  @exclusivity(unchecked) private(set) var steps = MoveStack<CodingPathStep>(initialCapacity: 16)
  /// How many of ``steps`` lead to the value being encoded.
  @exclusivity(unchecked) private var valueDepth = 0
  /// Where the value being encoded starts in `frames`: its container, once it asks for one,
  /// is `frames[valueBase]`.
  @exclusivity(unchecked) private var valueBase = 0
  /// Whether the value being encoded has written a leaf or opened its container.
  @exclusivity(unchecked) private var valueStarted = false
  /// The token of the container the value being encoded opened, to know it again.
  @exclusivity(unchecked) private var valueToken: UInt32 = 0
  /// Types met in this call that are neither the tree's leaves nor dictionaries: values of
  /// them run their `encode(to:)` without those questions being asked again. A document has
  /// a handful of such types, met again and again.
  @exclusivity(unchecked) private var compositeTypes: [ObjectIdentifier] = []
  static let compositeTypeLimit = 16
  /// Set by a misuse found where the protocol gives no way to throw; the result is dropped.
  @exclusivity(unchecked) var abandoned = false

  private init(options: JSONValueEncoder, style: JSONFormat) {
    tree = JSONValueEncoderImpl(state: JSONValueEncoderState(options: options), pathNode: .root)
    printer = JSONPrinter(style: style)
  }

  /// The text of `value`, or `nil` when one pass cannot make it (or encoding threw).
  static func encode<T: Encodable>(_ value: T, options: JSONValueEncoder, style: JSONFormat) -> [UInt8]? {
    let encoder = JSONTextEncoderImpl(options: options, style: style)
    do {
      try encoder.encodeValue(value, step: .none, isTopLevel: true)
    } catch {
      return nil
    }
    guard !encoder.abandoned, encoder.printer.count > 0 else { return nil }
    encoder.printer.finishDocument()
    return encoder.printer.makeBytes()
  }

  var codingPath: [any CodingKey] { path(depth: valueDepth) }
  var userInfo: [CodingUserInfoKey: Any] { tree.userInfo }

  // MARK: Frames

  /// Opens a container for the value being encoded, or finds the one it opened already.
  /// Returns its frame position and token, or `nil` after a misuse.
  private func openContainer(isObject: Bool) -> (position: Int, token: UInt32)? {
    if valueStarted {
      // Asking again for the container already open is allowed; anything else is a misuse.
      guard frames.count > valueBase, frames[valueBase].token == valueToken, frames[valueBase].isObject == isObject else {
        abandoned = true
        return nil
      }
      return (valueBase, valueToken)
    }
    valueStarted = true
    let position = pushFrame(isObject: isObject)
    valueToken = frames[position].token
    return (position, valueToken)
  }

  /// Writes `{` or `[` and opens a frame for it; returns its position. Path steps pushed
  /// after this (a nested container's key) are taken off when the frame closes.
  func pushFrame(isObject: Bool) -> Int {
    printer.append(isObject ? UInt8(ascii: "{") : UInt8(ascii: "["))
    nextToken &+= 1
    frames.push(Frame(token: nextToken, isObject: isObject, firstKey: writtenKeys.count, stepBase: steps.count))
    return frames.count - 1
  }

  /// Puts `step` on the path, unless it is `.none`; taken, not copied.
  @inline(__always)
  func pushStep(_ step: consuming CodingPathStep) {
    if step.isNone { return }
    steps.push(step)
  }

  private func closeTopFrame() {
    let frame = frames.pop()
    writtenKeys.removeAll(from: frame.firstKey)
    if steps.count > frame.stepBase { steps.removeAll(from: frame.stepBase) }
    if frame.count > 0, printer.pretty { printer.writeNewline(depth: frames.count) }
    printer.append(frame.isObject ? UInt8(ascii: "}") : UInt8(ascii: "]"))
  }

  /// Makes the frame at `position` the innermost again, closing the ones above it.
  /// - Throws: ``Abandon`` when that frame was closed already.
  @inline(__always)
  private func resume(_ position: Int, token: UInt32) throws {
    guard isOpen(position, token: token) else { throw Abandon() }
    while frames.count > position + 1 { closeTopFrame() }
  }

  /// Starts the member `key` of the object at `position`: separator, key and colon.
  func beginMember(_ key: String, in position: Int, token: UInt32) throws {
    try resume(position, token: token)
    beginEntry(in: position)
    let written: WrittenKey
    if let contiguous = key.utf8.withContiguousStorageIfAvailable({ writeKey(utf8: $0) }) {
      written = contiguous
    } else {
      var copy = key  // native strings are contiguous already; `withUTF8` makes any other so
      written = copy.withUTF8 { writeKey(utf8: $0) }
    }
    try recordKey(written, in: position)
  }

  /// Writes a key given as its UTF-8 bytes and returns where its text went.
  @inline(__always)
  private func writeKey(utf8 bytes: UnsafeBufferPointer<UInt8>) -> WrittenKey {
    let start = printer.count
    let end = printer.writeKey(utf8: bytes)
    return WrittenKey(start: start, end: end, bit: JSONKeyFilter.bit(ofUTF8: bytes))
  }

  /// Starts the next element of the array at `position`; returns its index.
  func beginElement(in position: Int, token: UInt32) throws -> Int {
    try resume(position, token: token)
    beginEntry(in: position)
    return frames[position].count - 1
  }

  @inline(__always)
  private func beginEntry(in position: Int) {
    if frames[position].count > 0 { printer.append(UInt8(ascii: ",")) }
    frames[position].count += 1
    if printer.pretty { printer.writeNewline(depth: position + 1) }
  }

  // MARK: Values

  /// Writes `value` at the current place, found at `step` below the current path. Plain
  /// leaves are written directly; the tree's other leaves and dictionaries are made by the
  /// tree encoder and printed; anything else runs its `encode(to:)` on this encoder.
  /// A top-level value that encodes nothing is the tree encoder's error to report.
  func encodeValue<T: Encodable>(_ value: T, step: @autoclosure () -> CodingPathStep, isTopLevel: Bool = false) throws {
    if try writePlainLeaf(value, step: step()) { return }
    if !compositeTypes.contains(ObjectIdentifier(T.self)) {
      if let leaf = try tree.leaf(value, parent: pathNode(depth: steps.count), step: step()) { return writeLeaf(leaf) }
      if tree.isDictionary(T.self) {
        guard let json = try tree.wrapIfEncoded(value, parent: pathNode(depth: steps.count), step: step()) else {
          return printer.append("{}")
        }
        return writeLeaf(json)
      }
      if compositeTypes.isEmpty { compositeTypes.reserveCapacity(JSONTextEncoderImpl.compositeTypeLimit) }
      if compositeTypes.count < JSONTextEncoderImpl.compositeTypeLimit { compositeTypes.append(ObjectIdentifier(T.self)) }
    }
    let savedDepth = valueDepth
    let savedStepCount = steps.count
    let savedBase = valueBase
    let savedStarted = valueStarted
    let savedToken = valueToken
    pushStep(step())
    valueDepth = steps.count
    valueBase = frames.count
    valueStarted = false
    defer {
      if steps.count > savedStepCount { steps.removeAll(from: savedStepCount) }
      valueDepth = savedDepth
      valueBase = savedBase
      valueStarted = savedStarted
      valueToken = savedToken
    }
    try value.encode(to: self)
    // Fewer frames than the value started with: it wrote through a container of an enclosing
    // value (kept from earlier), which closed containers still being written.
    guard frames.count >= valueBase else { throw Abandon() }
    while frames.count > valueBase { closeTopFrame() }
    if !valueStarted {
      if isTopLevel { throw Abandon() }
      printer.append("{}")  // encoded nothing: an empty object, as the tree has it
    }
  }

  /// Writes a value the tree encoder made (a number, a string for a float strategy, a
  /// dictionary...) at the current place.
  func writeLeaf(_ leaf: JSONValue) {
    printer.write(leaf, depth: frames.count)
  }

  // MARK: Encoder

  func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
    let frame = openContainer(isObject: true)
    return KeyedEncodingContainer(
      JSONTextKeyedEncodingContainer<Key>(
        encoder: self, position: frame?.position ?? -1, token: frame?.token ?? 0, pathDepth: valueDepth))
  }

  func unkeyedContainer() -> any UnkeyedEncodingContainer {
    let frame = openContainer(isObject: false)
    return JSONTextUnkeyedEncodingContainer(
      encoder: self, position: frame?.position ?? -1, token: frame?.token ?? 0, pathDepth: valueDepth)
  }

  func singleValueContainer() -> any SingleValueEncodingContainer { self }

  // MARK: Single-value container

  /// Claims the value's place for one leaf.
  private func beginSingleValue() throws {
    guard !valueStarted else { throw Abandon() }
    valueStarted = true
  }

  func encodeNil() throws {
    try beginSingleValue()
    printer.append("null")
  }
  func encode(_ value: Bool) throws {
    try beginSingleValue()
    printer.append(value ? "true" : "false")
  }
  func encode(_ value: String) throws {
    try beginSingleValue()
    printer.writeString(value)
  }
  func encode(_ value: Double) throws {
    try beginSingleValue()
    try writeDouble(value, parentDepth: valueDepth, step: .none)
  }
  func encode(_ value: Float) throws {
    try beginSingleValue()
    writeLeaf(try tree.box(value, parent: pathNode(depth: valueDepth), step: .none))
  }
  func encode(_ value: Int) throws { try integer(Int64(value)) }
  func encode(_ value: Int8) throws { try integer(Int64(value)) }
  func encode(_ value: Int16) throws { try integer(Int64(value)) }
  func encode(_ value: Int32) throws { try integer(Int64(value)) }
  func encode(_ value: Int64) throws { try integer(value) }
  func encode(_ value: Int128) throws { try number(JSONNumber(value)) }
  func encode(_ value: UInt) throws { try integer(UInt64(value)) }
  func encode(_ value: UInt8) throws { try integer(UInt64(value)) }
  func encode(_ value: UInt16) throws { try integer(UInt64(value)) }
  func encode(_ value: UInt32) throws { try integer(UInt64(value)) }
  func encode(_ value: UInt64) throws { try integer(value) }
  func encode(_ value: UInt128) throws { try number(JSONNumber(value)) }
  func encode<T: Encodable>(_ value: T) throws {
    try beginSingleValue()
    try encodeValue(value, step: .none)
  }

  private func integer(_ value: Int64) throws {
    try beginSingleValue()
    printer.writeInteger(value)
  }

  private func integer(_ value: UInt64) throws {
    try beginSingleValue()
    printer.writeInteger(value)
  }

  private func number(_ number: JSONNumber) throws {
    try beginSingleValue()
    printer.appendUTF8(of: number.text)
  }
}
