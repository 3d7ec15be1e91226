import CCSyncSystem
import CCSyncJSON

extension JSONTextEncoderImpl {
  /// Writes `value` when it is one of the leaves a config is mostly made of (`String`, `Int`,
  /// `Bool`, `Double`, or an optional one of them) and returns `true`; returns `false` for any
  /// other type. The same bytes as the tree encoder's, whose `Optional.encode(to:)` writes
  /// `null` or the wrapped value; without the detour through `encode(to:)`, a single-value
  /// container and a coding path step for an optional.
  func writePlainLeaf<T: Encodable>(_ value: T, step: @autoclosure () -> CodingPathStep) throws -> Bool {
    if T.self == String.self {
      printer.writeString(reinterpret(value, as: String.self))
    } else if T.self == Int.self {
      printer.writeInteger(Int64(reinterpret(value, as: Int.self)))
    } else if T.self == Bool.self {
      writeBool(reinterpret(value, as: Bool.self))
    } else if T.self == Double.self {
      try writeDouble(reinterpret(value, as: Double.self), parentDepth: steps.count, step: step())
    } else if T.self == [String].self {
      writeStrings(reinterpret(value, as: [String].self))
    } else if T.self == [String: String].self {
      writeStringDictionary(reinterpret(value, as: [String: String].self))
    } else if T.self == String?.self {
      guard let string = reinterpret(value, as: String?.self) else { return writeNull() }
      printer.writeString(string)
    } else if T.self == Int?.self {
      guard let integer = reinterpret(value, as: Int?.self) else { return writeNull() }
      printer.writeInteger(Int64(integer))
    } else if T.self == Bool?.self {
      guard let bool = reinterpret(value, as: Bool?.self) else { return writeNull() }
      writeBool(bool)
    } else if T.self == Double?.self {
      guard let double = reinterpret(value, as: Double?.self) else { return writeNull() }
      try writeDouble(double, parentDepth: steps.count, step: step())
    } else {
      return false
    }
    return true
  }

  /// Writes `true` or `false`.
  func writeBool(_ value: Bool) {
    printer.append(value ? "true" : "false")
  }

  /// Writes `null` and returns `true`, for ``writePlainLeaf(_:step:)``'s `return`.
  private func writeNull() -> Bool {
    printer.append("null")
    return true
  }

  /// Writes a double as the tree encoder boxes it, at `step` below the first `parentDepth`
  /// steps of the path (which is only built when the value has no JSON spelling).
  func writeDouble(_ value: Double, parentDepth: Int, step: @autoclosure () -> CodingPathStep) throws {
    if value.isFinite { return printer.writeDouble(value) }
    writeLeaf(try tree.box(value, parent: pathNode(depth: parentDepth), step: step()))
  }

  /// Writes an array of strings as the printer writes the tree encoder's array of them.
  private func writeStrings(_ strings: [String]) {
    guard !strings.isEmpty else { return printer.append("[]") }
    let depth = frames.count
    printer.append(UInt8(ascii: "["))
    for index in strings.indices {
      if index > 0 { printer.append(UInt8(ascii: ",")) }
      if printer.pretty { printer.writeNewline(depth: depth + 1) }
      printer.writeString(strings[index])
    }
    if printer.pretty { printer.writeNewline(depth: depth) }
    printer.append(UInt8(ascii: "]"))
  }

  /// Writes a `[String: String]` as the printer writes the tree encoder's object for it: its
  /// members in ``ObjectBuffer/dictionaryOrder(of:)``.
  /// The members and their order are kept in temporary buffers, not arrays.
  private func writeStringDictionary(_ dictionary: [String: String]) {
    guard !dictionary.isEmpty else { return printer.append("{}") }
    withUnsafeTemporaryAllocation(of: (key: String, value: String).self, capacity: dictionary.count) { members in
      _ = members.initialize(from: dictionary)
      defer { members.deinitialize() }
      ObjectBuffer.withDictionaryOrder(of: members.lazy.map(\.key)) { order in
        let depth = frames.count
        printer.append(UInt8(ascii: "{"))
        for index in order.indices {
          if index > 0 { printer.append(UInt8(ascii: ",")) }
          if printer.pretty { printer.writeNewline(depth: depth + 1) }
          printer.writeKey(members[order[index]].key)
          printer.writeString(members[order[index]].value)
        }
        if printer.pretty { printer.writeNewline(depth: depth) }
        printer.append(UInt8(ascii: "}"))
      }
    }
  }

  /// `value` as `U`, which the caller has checked is its type: a plain copy, where `as!` in
  /// unspecialized code goes through the runtime's dynamic cast.
  @inline(__always)
  private func reinterpret<T, U>(_ value: T, as type: U.Type) -> U {
    unsafeBitCast(value, to: U.self)
  }
}
