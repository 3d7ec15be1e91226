import Foundation
import Testing
@testable import CCSync

@Suite struct SharedDocumentTests {
  struct Refused: Error {}

  @Test func anUpdateThatThrowsCreatesNoFile() throws {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.file("doc.json")
    #expect(throws: Refused.self) { try SharedDocument(path: path).update { _ in throw Refused() } }
    #expect(!FileManager.default.fileExists(atPath: path))
  }

  @Test func missingFilePolicyFailRunsNothing() throws {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.file("doc.json")
    var ran = false
    #expect(throws: StorageError.self) {
      try SharedDocument(path: path).update(missingFile: .fail) { _ in ran = true }
    }
    #expect(!ran)
    #expect(!FileManager.default.fileExists(atPath: path))
  }

  @Test func writePoliciesDecideWhetherAReorderingIsWritten() throws {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.file("doc.json")
    writeFile(path, "{\"a\": 1, \"b\": 2}")
    let document = SharedDocument(path: path)
    let reordered: JSONValue = .object(JSONObject([("b", 2), ("a", 1)]))
    try document.update { $0 = reordered }
    #expect(try String(contentsOfFile: path, encoding: .utf8) == "{\"a\": 1, \"b\": 2}")
    try document.update(writes: .whenTextDiffers) { $0 = reordered }
    #expect(try String(contentsOfFile: path, encoding: .utf8) == "{\n  \"b\": 2,\n  \"a\": 1\n}\n")
  }

  @Test func anInvalidFileIsLeftUntouchedUnderTheFailPolicy() throws {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.file("doc.json")
    writeFile(path, "{oops")
    #expect(throws: StorageError.self) { try SharedDocument(path: path).update { $0 = ["x": 1] } }
    #expect(try String(contentsOfFile: path, encoding: .utf8) == "{oops")
    #expect(try directory.names() == ["doc.json", "doc.json.lock"])
  }
}
