import CCSync
import Foundation

/// A struct whose dictionary the round-trip test empties of a key its default holds: the
/// nested case of "a removed key stays removed". Mirrored in
/// Tests/CCSyncTests/Storage/RoundTripTests.swift.
struct RoundTripProfile: Codable, Equatable, Sendable {
  var name = "default"
  var weights: [String: Double] = ["a": 1, "b": 2]
}

/// `round-trip DIR`: writes one file per value the round-trip table of docs/SEMANTICS.md
/// lists, each through a storage of its own type (`.manual`, saved), so that the test
/// process can read each back with a new storage. The values are the ones
/// Tests/CCSyncTests/Storage/RoundTripTests.swift expects; the defaults differ from them,
/// so a value read back comes from the file.
func runRoundTrip(_ arguments: [String]) -> Int32 {
  guard let directory = arguments.first else {
    FileHandle.standardError.write(Data("usage: round-trip DIR\n".utf8))
    return 64
  }
  func write<Value: Codable & Sendable>(_ name: String, default defaultValue: Value, _ value: Value) throws {
    let storage = CodableStorage(
      defaultValue: defaultValue, path: "\(directory)/\(name).json", updateMode: .manual,
      options: StorageOptions(watchesForChanges: false))
    storage.wrappedValue = value
    try storage.save()
  }
  do {
    try write("doubles", default: [Double](), [0.1, 1e-300, .greatestFiniteMagnitude, -0.0, .leastNonzeroMagnitude, 1.0 / 3.0])
    try write("floats", default: [Float](), [0.1, -0.0, .greatestFiniteMagnitude, .leastNonzeroMagnitude, 1.0 / 3.0])
    try write("data", default: Data(), Data((0...255).map { UInt8($0) }))
    try write("date-microseconds", default: Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: 1_764_000_000.123456))
    try write("date-nanoseconds", default: Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: 1_764_000_000.123456789))
    try write("set", default: Set<String>(), ["alpha", "béta", "", "gamma"])
    try write("int-keys", default: [Int: String](), [1: "one", -2: "minus two", 300: "three hundred"])
    try write("optional-nil", default: String?.some("default"), String?.none)
    try write("optional-some", default: String?.none, String?.some("some"))
    try write("nested-optional-inner-nil", default: Int??.some(.some(1)), Int??.some(.none))
    try write("nested-optional-value", default: Int??.none, Int??.some(.some(3)))
    try write("dictionary-key-removed", default: ["a": 1.0, "b": 2.0], ["b": 2.0])
    try write("dictionary-emptied", default: ["a": 1.0], [String: Double]())
    try write("struct-dictionary-key-removed", default: RoundTripProfile(), RoundTripProfile(name: "written", weights: ["b": 0.5]))
  } catch {
    FileHandle.standardError.write(Data("round-trip failed: \(error)\n".utf8))
    return 1
  }
  print("done")
  return 0
}
