import Foundation
import Testing
@testable import CCSync
import CCSyncJSON

/// The struct the helper's `round-trip` mode writes (Sources/CCSyncTestHelper/RoundTripHelper.swift).
private struct RoundTripProfile: Codable, Equatable, Sendable {
  var name = "default"
  var weights: [String: Double] = ["a": 1, "b": 2]
}

/// "What a program wrote is what the next reader gets" (docs/SEMANTICS.md, "Values that
/// round-trip"): a child process writes each value through a storage of its own, and this
/// process reads it back with a new storage whose default differs, comparing exactly
/// (floating-point values by their bits, so `-0.0` is not `0.0`).
@Suite struct RoundTripTests {
  /// Runs the helper's `round-trip` mode into a fresh directory, then `body`.
  private func withWrittenValues(_ body: (TemporaryDirectory) throws -> Void) throws {
    try withTemporaryDirectory { directory in
      let outcome = try ChildProcess.run(try testHelper(), ["round-trip", directory.path])
      try #require(outcome.succeeded, "\(outcome.standardError)")
      try body(directory)
    }
  }

  /// A new storage's value for the file `name`, with `defaultValue` as its default.
  private func read<Value: Codable & Sendable>(_ directory: TemporaryDirectory, _ name: String, default defaultValue: Value) throws -> Value {
    let storage = CodableStorage(
      defaultValue: defaultValue, path: directory.file("\(name).json"), updateMode: .manual,
      options: StorageOptions(watchesForChanges: false, logger: .silent))
    try #require(storage.lastError == nil, "\(String(describing: storage.lastError))")
    return storage.wrappedValue
  }

  @Test func floatingPointValuesComeBackBitForBit() throws {
    try withWrittenValues { directory throws in
      let doubles: [Double] = [0.1, 1e-300, .greatestFiniteMagnitude, -0.0, .leastNonzeroMagnitude, 1.0 / 3.0]
      let readDoubles = try read(directory, "doubles", default: [Double]())
      #expect(readDoubles.map(\.bitPattern) == doubles.map(\.bitPattern))
      let floats: [Float] = [0.1, -0.0, .greatestFiniteMagnitude, .leastNonzeroMagnitude, 1.0 / 3.0]
      let readFloats = try read(directory, "floats", default: [Float]())
      #expect(readFloats.map(\.bitPattern) == floats.map(\.bitPattern))
      // Shortest round-trip text: Float 0.1 is written `0.1`, not the Double `0.10000000149011612`.
      #expect(try fileJSON(directory.file("floats.json")).arrayValue?.first == 0.1)
    }
  }

  @Test func dataWithEveryByteValueComesBackExactly() throws {
    try withWrittenValues { directory throws in
      #expect(try read(directory, "data", default: Data()) == Data((0...255).map { UInt8($0) }))
    }
  }

  /// Dates are kept to the microsecond: one with microseconds comes back equal, one with
  /// nanoseconds comes back rounded to the nearest microsecond.
  @Test func datesKeepMicroseconds() throws {
    try withWrittenValues { directory throws in
      let microseconds = try read(directory, "date-microseconds", default: Date(timeIntervalSince1970: 0))
      #expect(microseconds == Date(timeIntervalSince1970: 1_764_000_000.123456))
      #expect(try fileJSON(directory.file("date-microseconds.json")) == "2025-11-24T16:00:00.123456Z")
      let nanoseconds = try read(directory, "date-nanoseconds", default: Date(timeIntervalSince1970: 0))
      #expect(nanoseconds == Date(timeIntervalSince1970: 1_764_000_000.123457))
      #expect(try fileJSON(directory.file("date-nanoseconds.json")) == "2025-11-24T16:00:00.123457Z")
    }
  }

  @Test func setsAndIntegerKeyedDictionariesComeBackExactly() throws {
    try withWrittenValues { directory throws in
      #expect(try read(directory, "set", default: Set(["default"])) == ["alpha", "béta", "", "gamma"])
      #expect(try read(directory, "int-keys", default: [7: "default"]) == [1: "one", -2: "minus two", 300: "three hundred"])
    }
  }

  /// `nil` comes back `nil` over a default that has a value; `Int??` keeps `.some(3)`, but
  /// `.some(nil)` is `null` in JSON, as `nil` is, and comes back `nil`.
  @Test func optionalsComeBackAsWrittenExceptANilInsideSome() throws {
    try withWrittenValues { directory throws in
      #expect(try read(directory, "optional-nil", default: String?.some("default")) == nil)
      #expect(try read(directory, "optional-some", default: String?.none) == "some")
      #expect(try read(directory, "nested-optional-value", default: Int??.none) == .some(.some(3)))
      let innerNil = try read(directory, "nested-optional-inner-nil", default: Int??.some(.some(1)))
      #expect(innerNil == Int??.none)
    }
  }

  /// Issue 24 item 3: a key removed from a dictionary stays removed for a reader whose default
  /// holds it, at the top level and inside a struct; the reader's next save does not write it
  /// back.
  @Test func aKeyRemovedFromADictionaryStaysRemoved() throws {
    try withWrittenValues { directory throws in
      #expect(try read(directory, "dictionary-key-removed", default: ["a": 1.0, "b": 2.0]) == ["b": 2.0])
      #expect(try read(directory, "dictionary-emptied", default: ["a": 1.0]) == [:])
      #expect(try fileJSON(directory.file("dictionary-emptied.json")) == .object(JSONObject()))

      let path = directory.file("struct-dictionary-key-removed.json")
      let reader = CodableStorage(
        defaultValue: RoundTripProfile(), path: path, updateMode: .manual, options: StorageOptions(watchesForChanges: false))
      #expect(reader.wrappedValue == RoundTripProfile(name: "written", weights: ["b": 0.5]))
      reader.wrappedValue.name = "read and saved"
      try reader.save()
      #expect(try fileJSON(path).objectValue?["weights"] == ["b": 0.5])
      let next = try read(directory, "struct-dictionary-key-removed", default: RoundTripProfile())
      #expect(next == RoundTripProfile(name: "read and saved", weights: ["b": 0.5]))
    }
  }
}
