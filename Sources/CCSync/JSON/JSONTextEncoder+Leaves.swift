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
      try writeDouble(reinterpret(value, as: Double.self), step: step())
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
      try writeDouble(double, step: step())
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

  /// Writes a double as the tree encoder boxes it, at `step` below the current path (which is
  /// only built when the value has no JSON spelling).
  private func writeDouble(_ value: Double, step: CodingPathStep) throws {
    writeLeaf(try tree.box(value, parent: pathNode(depth: steps.count), step: step))
  }

  /// `value` as `U`, which the caller has checked is its type: a plain copy, where `as!` in
  /// unspecialized code goes through the runtime's dynamic cast.
  @inline(__always)
  private func reinterpret<T, U>(_ value: T, as type: U.Type) -> U {
    unsafeBitCast(value, to: U.self)
  }
}
