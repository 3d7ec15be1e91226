import Foundation
import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncSystem

/// The gate in the library: a save or update whose result fails throws and writes nothing;
/// a version another process writes that fails is not adopted, is reported once, and the
/// next good one is.
@Suite struct StorageGateTests {
  static let schema = #"{"type": "object", "properties": {"fontSize": {"type": "integer", "minimum": 6}}}"#

  @Test func aRefusedSaveThrowsWritesNothingAndStaysPending() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      let options = StorageOptions(flushesAtExit: false, logger: .silent, schema: .value(try JSONValue(parsing: Self.schema), name: "inline"))
      let storage = CodableStorage(defaultValue: SharedSettings(), path: path, updateMode: .manual, options: options)
      storage.wrappedValue.fontSize = 14
      try storage.save()
      let good = try Data(contentsOf: URL(fileURLWithPath: path))
      storage.wrappedValue.fontSize = 2
      #expect(throws: StorageError.self) { try storage.save() }
      #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == good)
      #expect(storage.wrappedValue.fontSize == 2, "the local value stays, pending")
      do {
        try storage.update { $0.fontSize = 3 }
        Issue.record("a refused update returned")
      } catch let error as StorageError {
        guard case .rejected(_, let reasons) = error else { Issue.record("\(error)"); return }
        #expect(reasons.first?.contains("/fontSize: 3 is less than the minimum of 6") == true || reasons.first?.contains("/fontSize") == true, "\(reasons)")
      }
      #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == good)
    }
  }

  @Test func aValidateClosureRefusesWithItsReason() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      let options = StorageOptions(flushesAtExit: false, logger: .silent, validate: { document in
        if case .object(let object) = document, object["theme"] == .string("neon") { throw DocumentGate.Refusal("neon is not a theme") }
      })
      let storage = CodableStorage(defaultValue: SharedSettings(), path: path, updateMode: .manual, options: options)
      storage.wrappedValue.theme = "neon"
      #expect { try storage.save() } throws: { error in "\(error)".contains("neon is not a theme") }
      #expect(!FileManager.default.fileExists(atPath: path) || (try? String(contentsOfFile: path, encoding: .utf8))?.contains("neon") == false)
    }
  }

  /// Another process writes a version its `$schema` refuses: this storage keeps its last
  /// good value, says why in `fileState` and once to `onError`, and takes the next good one.
  @Test func aRefusedVersionFromAnotherProcessIsNotAdopted() throws {
    try withTemporaryDirectory { directory in
      try CLI.write(Self.schema, to: directory.file("settings.schema.json"))
      let path = directory.file("settings.json")
      try CLI.write(#"{"$schema": "./settings.schema.json", "theme": "dark", "fontSize": 12}"#, to: path)
      let storage = CodableStorage(defaultValue: SharedSettings(), path: path, updateMode: .manual, options: watchingOptions)
      let errors = Protected<[String]>([])
      storage.onError { error in errors.withLock { $0.append(error.description) } }
      #expect(storage.wrappedValue.fontSize == 12)

      // A program that is not ccsync (no gate) writes a refused version, then touches it again.
      let bad = #"{"$schema": "./settings.schema.json", "theme": "bad", "fontSize": 1}"#
      let child = try ChildProcess.run("/bin/sh", ["-c", "printf '%s' '\(bad)' > '\(path).new' && mv '\(path).new' '\(path)'"])
      #expect(child.status == 0)
      #expect(waitUntil { errors.withLock { !$0.isEmpty } }, "no report of the refused version")
      #expect(storage.wrappedValue.theme == "dark" && storage.wrappedValue.fontSize == 12)
      guard case .invalid(let message) = storage.fileState else { Issue.record("\(storage.fileState)"); return }
      #expect(message.contains("/fontSize: 1"), "\(message)")

      let good = #"{"$schema": "./settings.schema.json", "theme": "good", "fontSize": 16}"#
      _ = try ChildProcess.run("/bin/sh", ["-c", "printf '%s' '\(good)' > '\(path).new' && mv '\(path).new' '\(path)'"])
      #expect(waitUntil { storage.wrappedValue.theme == "good" })
      #expect(storage.wrappedValue.fontSize == 16 && storage.fileState == .valid)
      #expect(errors.withLock { $0.count } == 1, "\(errors.withLock { $0 })")

      // The `$schema` member is the document's, not the value's: a save keeps it.
      storage.wrappedValue.fontSize = 18
      try storage.save()
      #expect(try String(contentsOfFile: path, encoding: .utf8).contains("\"$schema\": \"./settings.schema.json\""))
    }
  }

  /// The schema itself changes (another process rewrites it): the version kept is judged
  /// again, one that no longer passes is reported once and kept, and the next version is
  /// judged by the new schema.
  @Test func aSchemaChangeHasTheKeptVersionJudgedAgain() throws {
    try withTemporaryDirectory { directory in
      let schemaPath = directory.file("settings.schema.json")
      try CLI.write(Self.schema, to: schemaPath)
      let path = directory.file("settings.json")
      try CLI.write(#"{"$schema": "./settings.schema.json", "theme": "dark", "fontSize": 12}"#, to: path)
      let storage = CodableStorage(defaultValue: SharedSettings(), path: path, updateMode: .manual, options: watchingOptions)
      let errors = Protected<[String]>([])
      storage.onError { error in errors.withLock { $0.append(error.description) } }
      #expect(storage.wrappedValue.fontSize == 12 && storage.fileState == .valid)

      // Another process tightens the schema: 12 is now too small.
      let stricter = #"{"type": "object", "properties": {"fontSize": {"type": "integer", "minimum": 14}}}"#
      let child = try ChildProcess.run("/bin/sh", ["-c", "printf '%s' '\(stricter)' > '\(schemaPath).new' && mv '\(schemaPath).new' '\(schemaPath)'"])
      #expect(child.status == 0)
      #expect(waitUntil { errors.withLock { !$0.isEmpty } }, "the kept version was not judged again")
      guard case .invalid(let message) = storage.fileState else { Issue.record("\(storage.fileState)"); return }
      #expect(message.contains("/fontSize: 12") && message.contains("minimum"), "\(message)")
      #expect(storage.wrappedValue.fontSize == 12, "the value is kept")

      // The next version is judged by the new schema: 13 is refused, 16 taken.
      try CLI.write(#"{"$schema": "./settings.schema.json", "theme": "dark", "fontSize": 13}"#, to: path)
      #expect(waitUntil { errors.withLock { $0.count } >= 2 }, "\(errors.withLock { $0 })")
      try CLI.write(#"{"$schema": "./settings.schema.json", "theme": "dark", "fontSize": 16}"#, to: path)
      #expect(waitUntil { storage.wrappedValue.fontSize == 16 })
      #expect(storage.fileState == .valid)
      #expect(errors.withLock { $0.count } == 2, "one report per refusal: \(errors.withLock { $0 })")
    }
  }

  @Test func aDictionaryDoesNotSeeTheSchemaMember() throws {
    try withTemporaryDirectory { directory in
      try CLI.write(#"{"additionalProperties": {"type": "number"}}"#, to: directory.file("limits.schema.json"))
      let path = directory.file("limits.json")
      try CLI.write(#"{"$schema": "./limits.schema.json", "cpu": 2, "memory": 4}"#, to: path)
      let storage = CodableStorage(defaultValue: [String: Double](), path: path, updateMode: .manual, options: watchingOptions)
      #expect(storage.wrappedValue == ["cpu": 2, "memory": 4])
      #expect(storage.fileState == .valid)
    }
  }
}
