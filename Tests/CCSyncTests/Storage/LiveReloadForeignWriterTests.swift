import Foundation
import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

/// Programs that are not ccsync write the file, each its own way, while this process holds a
/// `CodableStorage` on it: the storage ends with exactly the final value, reports no error
/// (rename-based writers are atomic; in-place writers are covered by the grace period), and
/// live reload keeps working afterwards.
@Suite struct LiveReloadForeignWriterTests {
  /// One way of writing `{"theme": THEME, "fontSize": SIZE}` over `settings.json`, as a
  /// shell script run in the file's directory.
  struct Writer: Sendable, CustomTestStringConvertible {
    var name: String
    /// Whether the writer replaces the file by `rename` (atomic: readers never see a partial file).
    var isAtomic: Bool
    var script: @Sendable (_ theme: String, _ fontSize: Int) -> String

    var testDescription: String { name }

    static func json(_ theme: String, _ fontSize: Int) -> String {
      #"{"theme": "\#(theme)", "fontSize": \#(fontSize)}"#
    }

    /// The shell truncates, then `echo` writes: two steps a reader can fall between.
    static let echo = Writer(name: "echo >", isAtomic: false) { theme, size in
      "echo '\(json(theme, size))' > settings.json"
    }
    /// `cp` over an existing file opens it with `O_TRUNC` and writes in place.
    static let copy = Writer(name: "cp", isAtomic: false) { theme, size in
      "echo '\(json(theme, size))' > .source && cp .source settings.json"
    }
    /// `sed -i` writes a temp file in the directory and renames it over the file.
    static let sedInPlace = Writer(name: "sed -i", isAtomic: true) { theme, size in
      #"sed -i -e 's/"theme": "[^"]*"/"theme": "\#(theme)"/' -e 's/"fontSize": [0-9]*/"fontSize": \#(size)/' settings.json"#
    }
    /// A careful program: write a temp file, then `mv` it over the file.
    static let renameReplace = Writer(name: "mv", isAtomic: true) { theme, size in
      "echo '\(json(theme, size))' > .tmp-settings && mv .tmp-settings settings.json"
    }
  }

  /// `settings.json` in `directory`, holding theme "light" and size 13, and a watching,
  /// manually saved storage on it with its probe.
  private func watchedSettings(in directory: TemporaryDirectory) -> (String, CodableStorage<SharedSettings>, ReloadProbe<SharedSettings>) {
    let path = directory.file("settings.json")
    writeFile(path, Writer.json("light", 13) + "\n")
    let storage = CodableStorage(defaultValue: SharedSettings(), path: path, updateMode: .manual, options: watchingOptions)
    return (path, storage, ReloadProbe(storage))
  }

  @Test(arguments: [Writer.echo, .copy, .sedInPlace, .renameReplace])
  func foreignWriterEndsWithTheFinalValueAndReloadStillWorks(_ writer: Writer) throws {
    try withTemporaryDirectory { directory in
      let (path, storage, probe) = watchedSettings(in: directory)

      // Several writes back to back: a reader woken by one may fall into the next one's truncation.
      let script = (1...5).map { writer.script("theme\($0)", 20 + $0) }.joined(separator: " && ")
      try shell(script, in: directory.path)
      #expect(waitUntil { storage.wrappedValue == SharedSettings(theme: "theme5", fontSize: 25) })
      // An in-place writer leaves the file empty or partial for a moment: the grace period
      // re-reads it before reporting it, so no writer causes an error.
      #expect(probe.errors.isEmpty, "\(writer.isAtomic ? "an atomic writer caused" : "the grace period let through") \(probe.errors)")
      #expect(storage.fileState == .valid)
      #expect(!storage.hasPendingChanges)
      #expect(probe.changes.allSatisfy { $0.origin == .external })

      // Still live: a ccsync writer in another process, then this writer once more.
      let child = try startSession(path)
      #expect(child.request("set counter 7") != nil)
      #expect(waitUntil { storage.wrappedValue.counter == 7 })
      _ = child.finish()
      try shell(writer.script("last", 40), in: directory.path)
      #expect(waitUntil { storage.wrappedValue.theme == "last" && storage.wrappedValue.fontSize == 40 })
      #expect(probe.errors.isEmpty)
    }
  }

  /// A truncating writer that stalls between truncating and writing (a loaded machine, a
  /// slow pipe: here 300 ms, six times the grace period) causes no error: an empty file is
  /// reported only once it has stayed empty for 1 s. One that stays empty is reported.
  @Test func anEmptyFileIsReportedOnlyOnceItStaysEmpty() throws {
    try withTemporaryDirectory { directory in
      let (_, storage, probe) = watchedSettings(in: directory)

      // The shell prints how long the file really stayed empty (nanoseconds): on a machine so
      // loaded that the 300 ms stall outlasts the 1 s window, a report is the right answer.
      let stalled = try shell(
        ": > settings.json; start=$(date +%s%N); sleep 0.3; echo '\(Writer.json("slow", 30))' > settings.json; "
          + "end=$(date +%s%N); echo $((end - start))", in: directory.path)
      #expect(waitUntil { storage.wrappedValue == SharedSettings(theme: "slow", fontSize: 30) })
      let emptyFor = Int64(stalled.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
      if !probe.errors.isEmpty && emptyFor >= 900_000_000 {
        try Test.cancel("the machine kept the file empty for \(emptyFor / 1_000_000) ms, near or past the 1 s window: too loaded to tell a stall from an empty file")
      }
      #expect(probe.errors.isEmpty, "a stalled truncating writer was reported: \(probe.errors) (empty for \(emptyFor / 1_000_000) ms)")

      _ = try shell(": > settings.json", in: directory.path)
      #expect(waitUntil { probe.errors.contains { "\($0)".contains("empty document") } }, "an empty file was never reported")
      #expect(storage.wrappedValue.theme == "slow", "the value is kept")
      #expect(waitUntil { storage.fileState != .valid })
    }
  }

  /// The Kubernetes ConfigMap layout: `settings.json -> ..data/settings.json`, `..data ->
  /// ..v1`; an update writes `..v2` and swaps `..data` with one rename.
  @Test func configMapSymlinkSwapReloadsWithoutErrors() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      try shell("""
        mkdir ..v1 && echo '\(Writer.json("v1", 1))' > ..v1/settings.json && \
        ln -s ..v1 ..data && ln -s ..data/settings.json settings.json
        """, in: directory.path)
      let storage = CodableStorage(defaultValue: SharedSettings(), path: path, updateMode: .manual, options: watchingOptions)
      let probe = ReloadProbe(storage)
      #expect(storage.wrappedValue.theme == "v1")

      for version in 2...4 {
        try shell("""
          mkdir ..v\(version) && echo '\(Writer.json("v\(version)", version))' > ..v\(version)/settings.json && \
          ln -s ..v\(version) ..data_tmp && mv -T ..data_tmp ..data && rm -r ..v\(version - 1)
          """, in: directory.path)
        #expect(waitUntil { storage.wrappedValue.theme == "v\(version)" }, "version \(version) not seen")
      }
      #expect(storage.wrappedValue == SharedSettings(theme: "v4", fontSize: 4))
      #expect(probe.errors.isEmpty, "a symlink swap caused \(probe.errors)")
      #expect(storage.fileState == .valid)
      #expect(probe.changes.allSatisfy { $0.origin == .external })

      // A ccsync writer writes through the links; the links stay links.
      let child = try startSession(path)
      #expect(child.request("set counter 3") != nil)
      #expect(waitUntil { storage.wrappedValue.counter == 3 })
      _ = child.finish()
      #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: path)) == "..data/settings.json")
      #expect(try fileJSON(directory.file("..v4/settings.json")).objectValue?["counter"] == 3)
      #expect(probe.errors.isEmpty)
    }
  }
}
