import Foundation
import Testing
@testable import CCSync

/// The README examples of the two libraries this package descends from, written again in
/// their style with `@CodableStorage`: each must compile as their users type it and behave as
/// their README says (the file read or not read, the default written or not).
///
/// NCCCodableStorage's examples are marked "NCCCodableStorage", WLStorage's "WLStorage".
/// Serialized: the `filename:` and `key:` initialisers find their directory in
/// `XDG_DATA_HOME` and `XDG_CACHE_HOME`, which each test points at its own directory.
@Suite(.serialized) struct SeedCompatibilityTests {
  /// NCCCodableStorage's README type.
  struct MyData: Codable, Sendable, Equatable {
    var name: String = "Mister Default"
    var age: Double = 29
  }

  /// A fresh `XDG_DATA_HOME` and `XDG_CACHE_HOME` for one test, and the program's
  /// subdirectories of them, where `filename:` and `key:` storages keep their files.
  struct Home {
    let directory: TemporaryDirectory
    var data: String { directory.file("data/\(StorageDirectory.programName)") }
    var cache: String { directory.file("cache/\(StorageDirectory.programName)") }
    var keys: String { data + "/keys" }
  }

  /// Runs `body` with a ``Home`` in a temporary directory, `XDG_DATA_HOME` and
  /// `XDG_CACHE_HOME` pointing into it; unsets them and removes the directory afterwards.
  private func withHome(_ body: (Home) throws -> Void) throws {
    try withTemporaryDirectory { directory in
      setenv("XDG_DATA_HOME", directory.file("data"), 1)
      setenv("XDG_CACHE_HOME", directory.file("cache"), 1)
      defer {
        unsetenv("XDG_DATA_HOME")
        unsetenv("XDG_CACHE_HOME")
      }
      try body(Home(directory: directory))
    }
  }

  // MARK: - NCCCodableStorage

  /// The line the issue quotes as not compiling.
  @Test func defaultValueURLCompilesWithAnUpdateMode() throws {
    try withTemporaryDirectory { directory in
      let url = URL(fileURLWithPath: directory.file("doc.json"))
      let storage = CodableStorage(defaultValue: MyData(), url: url, updateMode: .manual)
      #expect(storage.wrappedValue == MyData())
      #expect(storage.path == url.path)
    }
  }

  /// NCCCodableStorage: "Whenever a defaultValue is given, it will attempt to load the
  /// initial value from the existing JSON at initialization time. If a saved value cannot be
  /// loaded or decoded, the defaultValue is used." And a missing file stays missing.
  @Test func defaultValueReadsTheFileAndFallsBackToTheDefault() throws {
    try withHome { home in
      try FileManager.default.createDirectory(atPath: home.data, withIntermediateDirectories: true)

      do {
        @CodableStorage(defaultValue: MyData(), filename: "myData.json") var myData: MyData
        #expect(myData == MyData())
        #expect(!FileManager.default.fileExists(atPath: home.data + "/myData.json"), "NCCCodableStorage writes no default")
      }

      try CLI.write(#"{"name": "Jenny", "age": 42}"#, to: home.data + "/myData.json")
      do {
        @CodableStorage(defaultValue: MyData(), filename: "myData.json") var myData: MyData
        #expect(myData == MyData(name: "Jenny", age: 42))
      }

      // "In this case an empty array": the file cannot be decoded as one, so the default.
      // (NCCCodableStorage's example says `.afterIdle(5.0)`; the mode's parameters are this
      // package's own, see UpdateMode.)
      try CLI.write(#"{"not": "an array"}"#, to: home.data + "/myDataArray.json")
      do {
        @CodableStorage(defaultValue: [], filename: "myDataArray.json", updateMode: .afterIdle, options: StorageOptions(logger: .silent))
        var myDataArray: [MyData]
        #expect(myDataArray == [])
        #expect(_myDataArray.lastError != nil)
      }
      #expect(try fileJSON(home.data + "/myDataArray.json") == ["not": "an array"], "an undecodable file is not replaced")
    }
  }

  /// NCCCodableStorage: "Initializing using initialValue: ... is the same as including it
  /// after the declaration": neither reads the file, and the value is written.
  @Test func initialValueAndWrappedValueDoNotReadTheFile() throws {
    try withTemporaryDirectory { directory in
      let someURL = URL(fileURLWithPath: directory.file("jenny.json"))
      let otherURL = URL(fileURLWithPath: directory.file("jenny2.json"))
      try CLI.write("1.5\n", to: someURL.path)
      try CLI.write("1.5\n", to: otherURL.path)

      // This:
      @CodableStorage(initialValue: 8.675309, url: someURL) var jenny: Double
      // is equivalent to this:
      @CodableStorage(url: otherURL) var jenny2: Double = 8.675309

      #expect(jenny == 8.675309 && jenny2 == 8.675309)
      try _jenny.flush()
      try _jenny2.flush()
      #expect(try fileJSON(someURL.path) == 8.675309)
      #expect(try fileJSON(otherURL.path) == 8.675309)
    }
  }

  /// NCCCodableStorage: "We can initialize with manual value updates instead of automatic
  /// also. Data can then be manually loaded with _someData.load() or saved with
  /// _someData.save()." (Here `load()` keeps unsaved local edits on top of what it reads;
  /// NCCCodableStorage's replaced them.)
  @Test func manualModeSavesAndLoadsOnRequest() throws {
    try withHome { home in
      let path = home.data + "/someData.json"

      @CodableStorage(filename: "someData.json", updateMode: .manual) var someData: [MyData] = []
      someData.append(MyData(name: "Ann", age: 30))
      #expect(!FileManager.default.fileExists(atPath: path), "manual: nothing written before save()")
      try _someData.save()
      #expect(try fileJSON(path) == [["name": "Ann", "age": 30]])

      // Another program changes the file; load() takes it (live reload may have already).
      #expect(try CLI.run(["set", path, "0.age", "31"]).status == 0)
      try _someData.load()
      #expect(someData == [MyData(name: "Ann", age: 31)])
    }
  }

  /// NCCCodableStorage: "Creates the full path for the file based on the given
  /// directoryType", here the XDG directory the Apple one maps to (StorageDirectory's table).
  /// Its example's `.desktopDirectory`, a person's folder, has no per-program XDG
  /// counterpart and does not compile (it is unavailable, with a message saying so).
  @Test func directoryTypeMapsAppleDirectoriesOntoXDGOnes() throws {
    try withHome { home throws in

      @CodableStorage(filename: "someFileName.json", directoryType: .cachesDirectory, updateMode: .immediate)
      var fooooo: [String] = ["hello", "there"]
      #expect(_fooooo.path == home.cache + "/someFileName.json")
      #expect(try fileJSON(home.cache + "/someFileName.json") == ["hello", "there"])

      @CodableStorage(filename: "someString.json", updateMode: .immediate) var someString: String = "Hello!"
      #expect(_someString.path == home.data + "/someString.json", "documentDirectory by default: the data directory")
      #expect(try fileJSON(home.data + "/someString.json") == "Hello!")

      let support = CodableStorage(defaultValue: 1, filename: "n.json", directoryType: .applicationSupportDirectory)
      #expect(support.path == home.data + "/n.json")
      #expect(StorageDirectory.config.location(file: "c.json").description.hasSuffix("/\(StorageDirectory.programName)/c.json"))
      var status = stat()
      #expect(stat(home.cache, &status) == 0 && status.st_mode & 0o777 == 0o700, "created private, as every XDG location")
    }
  }

  // MARK: - WLStorage

  /// WLStorage: "If no value exists, the default is saved and used"; "Updates to the property
  /// are cached and saved to disk"; "flushed automatically on deinit". One value per key, in
  /// the program's key directory.
  @Test func keyWritesTheDefaultWhenNoValueExists() throws {
    try withHome { home throws in
      let path = home.keys + "/first_name.json"

      do {
        @CodableStorage(key: "first_name", defaultValue: nil) var firstName: String?
        #expect(firstName == nil)
        #expect(_firstName.path == path)
        #expect(try fileJSON(path) == .null, "the default is written before the initialiser returns")
        firstName = "Ada"
      }
      // Flushed on deinit, which a reload still running on the storage's queue (of the
      // default it wrote) can delay by a moment: wait for it (docs/SEMANTICS.md, "Exit
      // flushing and signals").
      #expect(waitUntil { (try? fileJSON(path)) == "Ada" }, "flushed on deinit")

      // A value exists now: it is read, and the default is neither used nor written.
      @CodableStorage(key: "first_name", defaultValue: "Grace") var again: String?
      #expect(again == "Ada")
      #expect(try fileJSON(path) == "Ada")
    }
  }

  /// WLStorage: `init(key:defaultValueClosure:)`, the closure called only when no value exists.
  @Test func keyDefaultValueClosureIsCalledOnlyWithoutAValue() throws {
    try withHome { home throws in
      let calls = Protected(0)
      func makeDefault() -> MyData {
        calls.withLock { $0 += 1 }
        return MyData(name: "From the closure", age: 1)
      }

      let first = CodableStorage(key: "profile", defaultValueClosure: makeDefault)
      #expect(calls.withLock { $0 } == 1)
      #expect(first.wrappedValue == MyData(name: "From the closure", age: 1))
      #expect(try fileJSON(home.keys + "/profile.json") == ["name": "From the closure", "age": 1])

      let second = CodableStorage(key: "profile", defaultValueClosure: makeDefault)
      #expect(calls.withLock { $0 } == 1, "the file has a value: the closure is not called")
      #expect(second.wrappedValue == first.wrappedValue)

      // Unsafe characters in a key are percent-encoded into one file name.
      let odd = CodableStorage(key: "user/42", defaultValueClosure: { 7 })
      #expect(odd.path == home.keys + "/user%2F42.json")
      #expect(try fileJSON(odd.path) == 7)
    }
  }

  /// WLStorage: "throttled to once per second". The `key:` initialisers default to
  /// `.throttled(.seconds(1))`: the first change is written at once (well before the 2 s an
  /// `.afterIdle` storage waits), the next one not before a second has passed.
  @Test func keyStoragesWriteThrottledToOncePerSecond() throws {
    try withHome { home throws in
      let path = home.keys + "/volume.json"
      do { _ = CodableStorage(key: "volume", defaultValue: 1) }  // writes the file
      #expect(try fileJSON(path) == 1)

      let storage = CodableStorage(key: "volume", defaultValue: 0)
      #expect(storage.updateMode == .throttled(.seconds(1)))
      #expect(CodableStorage(key: "other", defaultValueClosure: { 0 }).updateMode == .keyDefault)
      #expect(CodableStorage(defaultValue: 0, path: home.keys + "/plain.json").updateMode == .afterIdle)

      storage.wrappedValue = 2
      let start = ContinuousClock.now
      #expect(waitUntil(deadline: .milliseconds(1_500)) { (try? fileJSON(path)) == 2 }, "the first change at once")
      storage.wrappedValue = 3
      #expect(try fileJSON(path) == 2, "the second waits for the interval")
      #expect(storage.hasPendingChanges)
      #expect(waitUntil(deadline: .seconds(10)) { (try? fileJSON(path)) == 3 })
      #expect(ContinuousClock.now - start >= .milliseconds(900), "not before the second has passed")
    }
  }

  /// The option behind both behaviours: on for `key:`, off elsewhere, and either may be
  /// asked for. An invalid file is never overwritten by it.
  @Test func writingTheDefaultIsAnOption() throws {
    try withHome { home in
      try withTemporaryDirectory { directory in

        let keyWithout = CodableStorage(key: "quiet", defaultValue: 1, options: StorageOptions(writesDefaultWhenMissing: false))
        #expect(!FileManager.default.fileExists(atPath: keyWithout.path))
        #expect(keyWithout.fileState == .missing)

        let url = URL(fileURLWithPath: directory.file("asked.json"))
        let urlWith = CodableStorage(defaultValue: MyData(), url: url, options: StorageOptions(writesDefaultWhenMissing: true))
        #expect(try fileJSON(url.path) == ["name": "Mister Default", "age": 29])
        #expect(urlWith.fileState == .valid && !urlWith.hasPendingChanges)

        let pathWithout = CodableStorage(defaultValue: MyData(), path: directory.file("plain.json"))
        #expect(!FileManager.default.fileExists(atPath: pathWithout.path))

        try FileManager.default.createDirectory(atPath: home.keys, withIntermediateDirectories: true)
        try CLI.write("{ broken", to: home.keys + "/broken.json")
        let invalid = CodableStorage(key: "broken", defaultValue: 5, options: StorageOptions(logger: .silent))
        #expect(invalid.wrappedValue == 5)
        #expect(CLI.bytes(home.keys + "/broken.json") == Data("{ broken".utf8), "an invalid file is kept as it is")
      }
    }
  }
}
