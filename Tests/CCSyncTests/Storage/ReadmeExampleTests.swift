import Foundation
import Testing
import CCSync

/// The README's library example, compiled and run, so the README cannot drift from the API.
@Suite(.serialized) struct ReadmeExampleTests {
  struct Settings: Codable, Sendable { var theme = "light"; var fontSize = 13; var launches = 0 }

  final class App {
    @CodableStorage(defaultValue: Settings(), location: .config(app: "demo", file: "settings.json"))
    var settings: Settings
  }

  @Test func theReadmeExampleWorks() async throws {
    try await withTemporaryDirectory { directory in
      setenv("XDG_CONFIG_HOME", directory.path, 1)
      defer { unsetenv("XDG_CONFIG_HOME") }

      let app = App()
      app.settings.theme = "dark"
      try app.$settings.update { $0.launches += 1 }
      try await app.$settings.updateAsync { $0.launches += 1 }
      let watching = app.$settings.observe { change in StandardStreams.writeLine("\(change.origin) \(change.value.theme)") }
      defer { watching.cancel() }
      var iterator = app.$settings.values.makeAsyncIterator()
      let first = await iterator.next()
      #expect(first?.theme == "dark")

      let path = directory.path + "/demo/settings.json"
      #expect(try fileJSON(path) == ["theme": "dark", "fontSize": 13, "launches": 2])
    }
  }
}
