import Foundation
import Testing
@testable import CCSync
import CCSyncJSON

extension EtcdTests {
  /// Each host's file is written by people: a change that arrives from the key rewrites only
  /// the values that changed, and every host keeps its own comments and layout, while the key
  /// holds standard JSON (docs/CLI.md, "mirror").
  @Suite struct MirrorLayout {
    @Test func eachHostKeepsItsOwnCommentsAndLayout() throws {
      try withTemporaryDirectory { directory in
        let rig = try MirrorRig(fileName: "cfg.jsonc", in: directory)
        let zero = """
          // Machine zero's settings: edited by hand.
          {
              "name": "app",    // shown in the title
              "port": 1,
              "tags": ["a", "b"],
          }

          """
        let one = "/* machine one */\n{\n\t\"name\": \"app\",\n\t\"port\": 1, /* the port */\n\t\"tags\": [\n\t\t\"a\",\n\t\t\"b\"\n\t]\n}\n"
        try CLI.write(zero, to: rig.file(0))
        try CLI.write(one, to: rig.file(1))
        let mirrors = try [0, 1].map { try rig.startMirror($0) }
        defer { for mirror in mirrors { mirror.terminate() } }
        #expect(rig.keyValue() == ["name": "app", "port": 1, "tags": ["a", "b"]], "the key holds standard JSON")
        #expect(contents(rig.file(1)) == one, "the same value on both sides: m1's file is left as it is")

        // A change on m0 reaches m1 as the one value that changed.
        #expect(try CLI.run(["set", rig.file(0), "port", "2"]).succeeded)
        #expect(waitUntilFiles(rig, [0, 1]) { $0.integer("port") == 2 }, "\(jwccState(rig, [0, 1]))")
        #expect(contents(rig.file(0)) == zero.replacingOccurrences(of: "\"port\": 1", with: "\"port\": 2"))
        #expect(contents(rig.file(1)) == one.replacingOccurrences(of: "\"port\": 1", with: "\"port\": 2"))

        // A member added at the key lands in each file in that file's own style.
        try rig.put(#"{"name": "app", "port": 2, "tags": ["a", "b"], "debug": true}"#)
        #expect(waitUntilFiles(rig, [0, 1]) { $0[field: "debug"] == true }, "\(jwccState(rig, [0, 1]))")
        let zeroNow = contents(rig.file(0)) ?? ""
        let oneNow = contents(rig.file(1)) ?? ""
        for comment in ["// Machine zero's settings: edited by hand.", "// shown in the title"] {
          #expect(zeroNow.contains(comment), "m0 lost \(comment):\n\(zeroNow)")
        }
        #expect(zeroNow.contains("\n    \"debug\": true"), "m0's new member in its 4-space style:\n\(zeroNow)")
        for comment in ["/* machine one */", "/* the port */"] {
          #expect(oneNow.contains(comment), "m1 lost \(comment):\n\(oneNow)")
        }
        #expect(oneNow.contains("\n\t\"debug\": true"), "m1's new member in its tab style:\n\(oneNow)")
        #expect(rig.keyValue()?[field: "debug"] == true)
        for mirror in mirrors { #expect(mirror.standardError == "") }
      }
    }
  }
}

/// Waits until the key and the JWCC files of `machines` hold one document satisfying
/// `condition`.
private func waitUntilFiles(_ rig: MirrorRig, _ machines: [Int], _ condition: (JSONValue) -> Bool) -> Bool {
  let end = ContinuousClock.now + .seconds(20)
  while ContinuousClock.now < end {
    if let value = rig.keyValue(), condition(value), machines.allSatisfy({ jwccValue(rig.file($0)) == value }) { return true }
    usleep(20_000)
  }
  return false
}

/// The value of the JWCC file at `path`; `nil` when it is missing or not JWCC.
private func jwccValue(_ path: String) -> JSONValue? {
  guard let bytes = CLI.bytes(path) else { return nil }
  return (try? LosslessJSONDocument(parsing: Array(bytes), syntax: .jwcc))?.value
}

private func jwccState(_ rig: MirrorRig, _ machines: [Int]) -> String {
  let key = rig.keyValue().map { "\($0)" } ?? "(none)"
  return "key: \(key)\n" + machines.map { "m\($0): \(contents(rig.file($0)) ?? "(none)")" }.joined(separator: "\n")
}
