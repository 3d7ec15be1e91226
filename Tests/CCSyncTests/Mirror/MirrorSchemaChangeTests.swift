import Foundation
import Testing
import CCSyncJSON

extension EtcdTests {
  /// A mirror follows its key's schema: a change of the schema alone judges the version both
  /// sides hold again (docs/SEMANTICS.md, "The gate").
  @Suite struct MirrorSchemaChange {
    static func schema(maximum: Int) -> String {
      #"{"type": "object", "properties": {"port": {"type": "integer", "maximum": \#(maximum)}}}"#
    }

    /// Runs `body` with one mirror of a key holding port 8080 under a schema beside it
    /// (maximum 65535), in sync.
    func withMirrorOfPort8080(_ body: (MirrorRig, [MirrorProcess]) throws -> Void) throws {
      try withTemporaryDirectory { directory in
        let rig = try MirrorRig(in: directory)
        try rig.put(Self.schema(maximum: 65535), key: "cfg.schema.json")
        try rig.withMirrors([0], startingFrom: #"{"$schema": "./cfg.schema.json", "port": 8080}"#) { mirrors in
          try body(rig, mirrors)
        }
      }
    }

    /// The schema beside the key tightens so the value both sides hold fails it: the mirror
    /// says so once, writes nothing to either side, and the next good version reaches the file.
    @Test func aSchemaChangeAloneIsReportedOnceAndNothingIsWritten() throws {
      try withMirrorOfPort8080 { rig, mirrors in
        let fileBefore = CLI.bytes(rig.file(0))
        let keyBefore = try rig.keyRecord()?.modRevision
        try rig.put(Self.schema(maximum: 1024), key: "cfg.schema.json")
        #expect(
          waitUntil { mirrors[0].errorLines(containing: "8080 is greater than the maximum 1024").count == 1 },
          "\(mirrors[0].standardError)")
        #expect(CLI.bytes(rig.file(0)) == fileBefore, "the file was written")
        #expect(try rig.keyRecord()?.modRevision == keyBefore, "the key was written")
        try rig.put(#"{"$schema": "./cfg.schema.json", "port": 443}"#)
        #expect(rig.waitUntilConverged([0]) { $0.integer("port") == 443 }, "\(rig.state([0]))")
        #expect(mirrors[0].errorLines(containing: "greater than the maximum").count == 1, "\(mirrors[0].standardError)")
      }
    }

    /// Two versions of the key refused for the same reason, one after the other: the mirror
    /// says so once for each (its retries say nothing more), writes neither to the file, and
    /// the next good version reaches it.
    @Test func eachRefusedVersionOfTheKeyIsReportedOnce() throws {
      try withMirrorOfPort8080 { rig, mirrors in
        let fileBefore = CLI.bytes(rig.file(0))
        let reports = { mirrors[0].errorLines(containing: "70000 is greater than the maximum 65535") }
        for (index, writer) in ["a", "b"].enumerated() {
          try rig.put(#"{"$schema": "./cfg.schema.json", "port": 70000, "by": "\#(writer)"}"#)
          #expect(waitUntil { reports().count == index + 1 }, "\(mirrors[0].standardError)")
        }
        #expect(CLI.bytes(rig.file(0)) == fileBefore, "the file was written")
        try rig.put(#"{"$schema": "./cfg.schema.json", "port": 443}"#)
        #expect(rig.waitUntilConverged([0]) { $0.integer("port") == 443 }, "\(rig.state([0]))")
        #expect(reports().count == 2, "\(mirrors[0].standardError)")
      }
    }

    /// Two local edits refused for the same reason, one after the other: each is reported
    /// once and neither reaches the key; the next good edit does.
    @Test func eachRefusedLocalEditIsReportedOnce() throws {
      try withMirrorOfPort8080 { rig, mirrors in
        let keyBefore = try rig.keyRecord()?.modRevision
        let reports = { mirrors[0].errorLines(containing: "70000 is greater than the maximum 65535") }
        for (index, writer) in ["a", "b"].enumerated() {
          let next = rig.file(0) + ".next"
          try CLI.write(#"{"$schema": "./cfg.schema.json", "port": 70000, "by": "\#(writer)"}"# + "\n", to: next)
          #expect(rename(next, rig.file(0)) == 0)
          #expect(waitUntil { reports().count == index + 1 }, "\(mirrors[0].standardError)")
        }
        #expect(try rig.keyRecord()?.modRevision == keyBefore, "the key was written")
        try CLI.write(#"{"$schema": "./cfg.schema.json", "port": 443}"# + "\n", to: rig.file(0) + ".next")
        #expect(rename(rig.file(0) + ".next", rig.file(0)) == 0)
        #expect(rig.waitUntilConverged([0]) { $0.integer("port") == 443 }, "\(rig.state([0]))")
        #expect(reports().count == 2, "\(mirrors[0].standardError)")
      }
    }

    /// A version of the key held back as refused is judged again when its schema alone
    /// changes: loosened, it reaches the file with no new version of either side.
    @Test func aRefusedVersionPassesWhenTheSchemaIsLoosened() throws {
      try withMirrorOfPort8080 { rig, mirrors in
        try rig.put(#"{"$schema": "./cfg.schema.json", "port": 70000}"#)
        #expect(
          waitUntil { !mirrors[0].errorLines(containing: "70000 is greater than the maximum 65535").isEmpty },
          "\(mirrors[0].standardError)")
        #expect(fileValue(rig.file(0))?.objectValue?["port"] == 8080, "the refused version reached the file")
        try rig.put(Self.schema(maximum: 100_000), key: "cfg.schema.json")
        #expect(rig.waitUntilConverged([0]) { $0.integer("port") == 70000 }, "\(rig.state([0])) \(mirrors[0].standardError)")
      }
    }
  }
}
