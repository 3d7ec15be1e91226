import Foundation
import Observation
import Testing
@testable import CCSync

/// `CodableStorage` and the Observation module: reading `wrappedValue` inside
/// `withObservationTracking` registers it, and every change observers hear (a local set,
/// another process's write, a reload merged with pending edits) triggers `onChange` once.
@Suite struct ObservationTests {
  /// Tracks `read` again each time `onChange` runs, from within `onChange`, so that a
  /// change reported twice would be counted twice; records what `onChange` read each time.
  final class Tracker: Sendable {
    let seen = Protected<[String]>([])
    private let read: @Sendable () -> String

    init(_ read: @escaping @Sendable () -> String) {
      self.read = read
      track()
    }

    var count: Int { seen.withLock { $0.count } }

    private func track() {
      withObservationTracking {
        _ = read()
      } onChange: { [self] in
        // Reading here must not deadlock: the storage tells the registrar out of its locks.
        seen.withLock { $0.append(read()) }
        track()
      }
    }
  }

  @Test func onChangeHearsEachLocalExternalAndMergedChangeOnce() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      try CLI.write(#"{"theme": "light", "fontSize": 13, "counter": 0, "tags": []}"#, to: path)
      let storage = CodableStorage(
        defaultValue: SharedSettings(), path: path, updateMode: .manual,
        options: StorageOptions(flushesAtExit: false, logger: .silent))
      let tracker = Tracker { "\(storage.wrappedValue.theme) \(storage.wrappedValue.fontSize)" }

      // Another process's write, reloaded by the watcher.
      #expect(try CLI.run(["set", path, "theme", "dark"]).status == 0)
      #expect(waitUntil { tracker.count == 1 }, "\(tracker.seen.withLock { $0 })")
      #expect(tracker.seen.withLock { $0 } == ["dark 13"])

      // A local change: heard before the setter returns, on this thread.
      storage.wrappedValue.theme = "blue"
      #expect(tracker.count == 2)

      // Another process's write while the local edit is pending: the reload merges the two.
      #expect(try CLI.run(["set", path, "fontSize", "20"]).status == 0)
      #expect(waitUntil { tracker.count == 3 }, "\(tracker.seen.withLock { $0 })")
      #expect(storage.wrappedValue.theme == "blue" && storage.wrappedValue.fontSize == 20)

      // No change, no call: an equal value set, a save that brings nothing new.
      storage.wrappedValue.theme = "blue"
      try storage.save()
      #expect(try fileJSON(path).objectValue?["theme"] == "blue")
      // A last local change, so that any late or repeated call above would show in the count.
      storage.wrappedValue.fontSize = 21
      #expect(tracker.seen.withLock { $0 } == ["dark 13", "blue 13", "blue 20", "blue 21"])
    }
  }

  /// An `@Observable` model that holds a storage: a view of it (here `withObservationTracking`
  /// on a computed property) hears another process's write through it.
  @Observable final class Model {
    @ObservationIgnored @CodableStorage var settings: SharedSettings
    var title = "Settings"

    var summary: String { "\(title): \(settings.theme)" }

    init(path: String) {
      _settings = CodableStorage(
        defaultValue: SharedSettings(), path: path, updateMode: .manual,
        options: StorageOptions(flushesAtExit: false, logger: .silent))
    }
  }

  @Test func anObservableModelHoldingAStorageSeesAnotherProcessWrite() throws {
    try withTemporaryDirectory { directory throws in
      let path = directory.file("settings.json")
      let model = Model(path: path)
      let changed = Protected(0)
      withObservationTracking {
        _ = model.summary
      } onChange: {
        changed.withLock { $0 += 1 }
      }
      #expect(try CLI.run(["set", path, "theme", "dark"]).status == 0)
      #expect(waitUntil { changed.withLock { $0 } == 1 })
      #expect(model.summary == "Settings: dark")
    }
  }
}
