import Foundation
import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

/// In-process behaviour of CodableStorage: reading, merging, errors, modes that need no timing.
@Suite struct CodableStorageTests {
  let quiet = StorageOptions(watchesForChanges: false, flushesAtExit: false, logger: .silent)

  @Test func missingFileStartsFromDefaultAndSaveCreatesIt() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      let storage = CodableStorage(defaultValue: SharedSettings(), path: path, updateMode: .manual, options: quiet)
      #expect(storage.wrappedValue == SharedSettings())
      #expect(storage.fileState == .missing)
      #expect(!FileManager.default.fileExists(atPath: path))
      storage.wrappedValue.theme = "dark"
      #expect(storage.hasPendingChanges)
      try storage.save()
      #expect(try fileJSON(path) == ["theme": "dark", "fontSize": 13, "counter": 0, "tags": []])
      #expect(!storage.hasPendingChanges)
    }
  }

  @Test func defaultValueReadsTheFileAndFillsMissingKeysFromTheDefault() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      writeFile(path, #"{"theme": "solarized", "fontSize": 20}"#)
      let storage = CodableStorage(defaultValue: SharedSettings(), path: path, updateMode: .manual, options: quiet)
      #expect(storage.wrappedValue == SharedSettings(theme: "solarized", fontSize: 20))
      #expect(storage.fileState == .valid)
      #expect(storage.lastError == nil)
    }
  }

  @Test func initialValueDoesNotReadTheFileAndReplacesItOnWrite() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      writeFile(path, #"{"theme": "solarized", "other": 1}"#)
      let storage = CodableStorage(initialValue: SharedSettings(theme: "mine"), location: .path(path), updateMode: .manual, options: quiet)
      #expect(storage.wrappedValue.theme == "mine")
      #expect(storage.hasPendingChanges)
      try storage.flush()
      #expect(try fileJSON(path) == ["theme": "mine", "fontSize": 13, "counter": 0, "tags": []])
    }
  }

  /// A relative path while the current directory has been removed is an error, not a file at
  /// `/` (getcwd fails; the path used to be taken from `/`, and a root process created
  /// `/NAME` there). Run in a child, since the current directory is the whole process's.
  @Test func aRelativePathInARemovedDirectoryIsAnError() throws {
    try withTemporaryDirectory { directory in
      let name = "ccsync-removed-cwd-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).json"
      defer {
        unlink("/" + name)
        unlink("/" + name + ".lock")
      }
      let session = try InteractiveChild(
        "/bin/sh", ["-c", "cd \"$2\" && mkdir gone && cd gone && rmdir \"$PWD\" && exec \"$0\" session \"$1\" manual",
                    try testHelper(), name, directory.path])
      #expect(session.nextLine(startingWith: "ready") != nil)
      session.request("set counter 3")
      let failure = session.request("save", reply: "failed")
      #expect(failure?.contains("no such directory") == true, "\(failure ?? "no reply")")
      #expect(session.finish() == 0)
      #expect(access("/" + name, F_OK) != 0, "a file was made at /\(name)")
    }
  }

  /// A value that cannot be encoded (NaN, which JSON has no spelling for) is reported at
  /// once, not silently taken as `null` and never written.
  @Test func aValueThatCannotBeEncodedIsReportedAtCreation() throws {
    struct Ratio: Codable, Sendable { var value = Double.nan }
    try withTemporaryDirectory { directory in
      let path = directory.file("ratio.json")
      let storage = CodableStorage(initialValue: Ratio(), location: .path(path), updateMode: .manual, options: quiet)
      #expect(storage.lastError?.description.contains("ratio.json") == true, "\(String(describing: storage.lastError))")
      if case .encodingFailed? = storage.lastError {} else { Issue.record("not an encoding error: \(String(describing: storage.lastError))") }
    }
  }

  @Test func unknownKeysAndTheirOrderSurviveASave() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      let original = """
        {
          "future": {"nested": [1, 2.50, "x"]},
          "theme": "light",
          "big": 12345678901234567890,
          "fontSize": 13
        }
        """
      writeFile(path, original)
      let storage = CodableStorage(defaultValue: SharedSettings(), path: path, updateMode: .manual, options: quiet)
      storage.wrappedValue.fontSize = 14
      try storage.save()
      let text = try String(contentsOfFile: path, encoding: .utf8)
      #expect(text.contains("12345678901234567890"))
      #expect(text.contains("2.50"))
      let json = try fileJSON(path)
      #expect(json.objectValue?.keys == ["future", "theme", "big", "fontSize"])
      #expect(json.objectValue?["fontSize"] == 14)
      #expect(json.objectValue?["future"] == ["nested": [1, .number(JSONNumber(text: "2.5")!), "x"]])
    }
  }

  @Test func corruptFileIsKeptAndTheDefaultUsed() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      let garbage = "{\"theme\": \"dark\", oops"
      writeFile(path, garbage)
      let errors = Protected<[String]>([])
      let storage = CodableStorage(defaultValue: SharedSettings(), path: path, updateMode: .manual, options: quiet)
      storage.onError { error in errors.withLock { $0.append(error.description) } }
      #expect(storage.wrappedValue == SharedSettings())
      guard case .invalid(let message) = storage.fileState else {
        Issue.record("expected invalid state, got \(storage.fileState)")
        return
      }
      #expect(message.contains(path))
      #expect(storage.lastError != nil)
      storage.wrappedValue.fontSize = 15
      try storage.save()
      let copies = try directory.names().filter { $0.hasPrefix("settings.json.corrupt-") }
      #expect(copies.count == 1)
      #expect(try String(contentsOfFile: directory.file(copies[0]), encoding: .utf8) == garbage)
      #expect(try fileJSON(path).objectValue?["fontSize"] == 15)
    }
  }

  @Test func wrongShapeKeepsDefaultAndReportsTheCodingPath() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      writeFile(path, #"{"theme": "dark", "fontSize": "huge", "extra": true}"#)
      let storage = CodableStorage(defaultValue: SharedSettings(), path: path, updateMode: .manual, options: quiet)
      #expect(storage.wrappedValue == SharedSettings())
      #expect(storage.lastError?.description.contains("fontSize") == true)
      // A later save merges only the field this process changed.
      storage.wrappedValue.counter = 7
      try storage.save()
      #expect(try fileJSON(path) == ["theme": "dark", "fontSize": "huge", "extra": true, "counter": 7])
      // The save landed, so its edit is no longer pending, though the file still cannot be
      // decoded: another process's later write of the same field is not undone by the next
      // save or flush (before, the edit stayed pending and was written again, for ever).
      #expect(!storage.hasPendingChanges)
      try SharedDocument(path: path).update { try $0.setValue(99, at: JSONPath(parsing: "counter")) }
      try storage.flush()
      storage.wrappedValue.theme = "blue"
      try storage.save()
      #expect(try fileJSON(path) == ["theme": "blue", "fontSize": "huge", "extra": true, "counter": 99])
      #expect(!storage.hasPendingChanges)
    }
  }

  /// Under an automatic mode, a save into a file the type cannot decode is made once, not
  /// again and again (its edit used to stay pending, so the scheduler saved at once, forever).
  @Test func aSaveIntoAnUndecodableFileIsMadeOnce() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      writeFile(path, #"{"theme": "dark", "fontSize": "huge"}"#)
      let errors = Protected(0)
      let watching = StorageOptions(flushesAtExit: false, logger: .silent)
      let storage = CodableStorage(defaultValue: SharedSettings(), path: path, updateMode: .afterIdle(.milliseconds(50)), options: watching)
      storage.onError { _ in errors.withLock { $0 += 1 } }
      storage.wrappedValue.counter = 7
      #expect(waitUntil { (try? fileJSON(path))?.objectValue?["counter"] == 7 })
      #expect(waitUntil { !storage.hasPendingChanges }, "the saved edit is still pending")
      let reported = errors.withLock { $0 }
      // Another process's write of the same field afterwards stays (reloads of the undecodable
      // file are reported; none of them writes).
      try SharedDocument(path: path).update { try $0.setValue(99, at: JSONPath(parsing: "counter")) }
      #expect(waitUntil { errors.withLock { $0 } > reported })
      try storage.flush()
      #expect(try fileJSON(path).objectValue?["counter"] == 99)
      #expect(errors.withLock { $0 } < reported + 10, "errors keep coming: \(errors.withLock { $0 })")
    }
  }

  /// A file another process reset to `{}` on purpose is changed like any other: an update
  /// starts from the defaults, not from this process's last synced value, which used to come
  /// back whole (only a missing or zero-byte file takes that, as a new file).
  @Test func aFileResetToAnEmptyObjectIsNotTakenForANewFile() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("reset.json")
      writeFile(path, #"{"theme": "dark", "fontSize": 20, "counter": 4}"#)
      let storage = CodableStorage(defaultValue: SharedSettings(), path: path, updateMode: .manual, options: quiet)
      try SharedDocument(path: path).replace(with: [:])
      try storage.update { $0.counter += 1 }
      #expect(try fileJSON(path) == ["counter": 1])
      // A zero-byte file (a writer that crashed between create and write) is a new file.
      writeFile(path, "")
      storage.wrappedValue.theme = "blue"
      try storage.save()
      #expect(try fileJSON(path) == ["theme": "blue", "fontSize": 13, "counter": 1, "tags": []])
      // So is one that is not valid JSON (kept aside first): the whole value is written, not
      // only the changed fields, which would leave every other field to its default.
      writeFile(path, #"{"theme": "dark", "fontSi"#)
      storage.wrappedValue.counter = 2
      try storage.save()
      #expect(try fileJSON(path) == ["theme": "blue", "fontSize": 13, "counter": 2, "tags": []])
    }
  }

  struct WithProxy: Codable, Sendable, Equatable {
    struct Server: Codable, Sendable, Equatable {
      var host: String
      var port: Int
    }
    var theme = "light"
    var proxy: Server?
  }

  /// An edit inside an object another process removed meanwhile puts this process's whole
  /// object back, which every process can still decode; it used to write an object holding
  /// only the edited field (`proxy` without `host`), and every process then fell back to
  /// its defaults.
  @Test func anEditInsideAnObjectRemovedMeanwhileKeepsTheFileDecodable() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("proxy.json")
      writeFile(path, #"{"theme": "dark", "proxy": {"host": "p.example", "port": 8080}}"#)
      let storage = CodableStorage(defaultValue: WithProxy(), path: path, updateMode: .manual, options: quiet)
      storage.wrappedValue.proxy?.port = 8081
      try SharedDocument(path: path).update { _ = try $0.removeValue(at: JSONPath(parsing: "proxy")) }
      try storage.save()
      #expect(storage.lastError == nil, "\(String(describing: storage.lastError))")
      let reader = CodableStorage(defaultValue: WithProxy(), path: path, updateMode: .manual, options: quiet)
      #expect(reader.lastError == nil, "\(String(describing: reader.lastError))")
      #expect(reader.wrappedValue == WithProxy(theme: "dark", proxy: .init(host: "p.example", port: 8081)))
    }
  }

  @Test func updateIsExactAcrossThreadsWithGroupCommit() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("counter.json")
      let storage = CodableStorage(defaultValue: SharedSettings(), path: path, updateMode: .manual, options: quiet)
      let threads = (0..<8).map { _ in
        BackgroundThread {
          for _ in 0..<50 { try storage.update { $0.counter += 1 } }
        }
      }
      for thread in threads { try thread.value(deadline: .seconds(60)) }
      #expect(try fileJSON(path).objectValue?["counter"] == 400)
      #expect(storage.wrappedValue.counter == 400)
    }
  }

  @Test func updateClosureThatThrowsWritesNothing() throws {
    struct Refused: Error {}
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      let storage = CodableStorage(defaultValue: SharedSettings(), path: path, updateMode: .manual, options: quiet)
      try storage.update { $0.counter = 1 }
      #expect(throws: Refused.self) {
        try storage.update { value in
          value.counter = 99
          throw Refused()
        }
      }
      #expect(try fileJSON(path).objectValue?["counter"] == 1)
    }
  }

  @Test func observersHearLocalChangesOnceWithTheirOrigin() throws {
    try withTemporaryDirectory { directory in
      let storage = CodableStorage(defaultValue: SharedSettings(), path: directory.file("s.json"), updateMode: .manual, options: quiet)
      let heard = Protected<[String]>([])
      let observation = storage.observe { change in
        heard.withLock { $0.append("\(change.origin):\(change.value.theme)") }
      }
      storage.wrappedValue.theme = "a"
      storage.wrappedValue.theme = "a"  // not a change
      storage.wrappedValue.theme = "b"
      observation.cancel()
      storage.wrappedValue.theme = "c"
      #expect(heard.withLock { $0 } == ["local:a", "local:b"])
    }
  }

  @Test func pendingChangesAreWrittenOnDeinit() throws {
    try withTemporaryDirectory { directory throws in
      let path = directory.file("settings.json")
      do {
        let storage = CodableStorage(defaultValue: SharedSettings(), path: path, updateMode: .afterIdle(.seconds(60)), options: quiet)
        storage.wrappedValue.theme = "written-on-deinit"
        #expect(!FileManager.default.fileExists(atPath: path))
      }
      #expect(try fileJSON(path).objectValue?["theme"] == "written-on-deinit")
    }
  }

  @Test func keyLocationsEncodeUnsafeKeys() throws {
    try withTemporaryDirectory { directory in
      let location = StorageLocation.key("user/42", in: .path(directory.path))
      #expect(try location.resolvePath() == directory.file("user%2F42.json"))
      #expect(StorageLocation.encodeKey("..") == "%2E.")
      let storage = CodableStorage(defaultValue: 5, location: location, updateMode: .manual, options: quiet)
      storage.wrappedValue = 6
      try storage.save()
      #expect(try fileJSON(directory.file("user%2F42.json")) == 6)
    }
  }

  @Test func xdgLocationsCreateThePrivateAppDirectory() throws {
    try withTemporaryDirectory { directory in
      setenv("XDG_STATE_HOME", directory.path, 1)
      defer { unsetenv("XDG_STATE_HOME") }
      let path = try StorageLocation.state(app: "demo-app", file: "state.json").resolvePath()
      #expect(path == directory.path + "/demo-app/state.json")
      var status = stat()
      #expect(stat(directory.path + "/demo-app", &status) == 0)
      #expect(status.st_mode & 0o777 == 0o700)
    }
  }

  @Test func propertyWrapperProjectsTheStorage() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("wrapped.json")
      final class App {
        @CodableStorage var settings: SharedSettings
        init(path: String) {
          _settings = CodableStorage(defaultValue: SharedSettings(), location: .path(path), updateMode: .manual,
                                     options: StorageOptions(watchesForChanges: false, flushesAtExit: false, logger: .silent))
        }
      }
      let app = App(path: path)
      app.settings.theme = "dark"
      try app.$settings.update { $0.fontSize += 1 }
      #expect(try fileJSON(path) == ["theme": "dark", "fontSize": 14, "counter": 0, "tags": []])
    }
  }
}
