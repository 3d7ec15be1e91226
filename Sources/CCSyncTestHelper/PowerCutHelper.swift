import CCSync
import CCSyncJSON
import CCSyncProcesses
import Foundation

/// The document the power-cut tests write: a version number and a filler whose letter and
/// length follow from it, so that a file holding parts of two versions, or a prefix of one,
/// cannot pass for a complete version.
struct PowerCutDocument: Codable, Sendable, Equatable {
  var version: Int
  var filler: String

  init(version: Int) {
    self.version = version
    let letters = Array("abcdefghijklmnopqrstuvwxyz")
    filler = String(repeating: letters[version % letters.count], count: 200 + (version % 17) * 300)
  }
}

/// `powercut-saves FILE FROM [--relaxed]`: prints `ready`, then writes versions FROM+1,
/// FROM+2, ... of ``PowerCutDocument`` until killed, printing `acked N` after each write of
/// version N returned. The writes take turns through the three ways the library replaces a
/// whole file: `SharedDocument.replace(with:)`, a `CodableStorage` save, and
/// `SharedFile.replaceContents(with:)` under `withLock` (the one whose directory `fsync`
/// runs under the lock, in `AtomicReplace.Renamed.makeDurable`). Durable unless `--relaxed`.
/// Prints `failed DESCRIPTION` and exits 1 when a write throws.
func runPowerCutSaves(_ arguments: [String]) -> Int32 {
  guard arguments.count >= 2, let from = Int(arguments[1]) else {
    FileHandle.standardError.write(Data("usage: powercut-saves FILE FROM [--relaxed]\n".utf8))
    return 64
  }
  let path = arguments[0]
  let durable = !arguments.contains("--relaxed")
  let document = SharedDocument(path: path, durable: durable, logger: .silent)
  let file = SharedFile(path: path, durable: durable, logger: .silent)
  let storage = CodableStorage(
    defaultValue: PowerCutDocument(version: from), path: path, updateMode: .manual,
    options: StorageOptions(durable: durable, watchesForChanges: false, flushesAtExit: false, logger: .silent))
  let encoder = JSONValueEncoder()
  StandardStreams.writeLine("ready")
  var version = from
  while true {
    version += 1
    let value = PowerCutDocument(version: version)
    do {
      switch version % 3 {
      case 0: try document.replace(with: try encoder.encode(value))
      case 1:
        storage.wrappedValue = value
        try storage.save()
      default:
        let bytes = SharedDocument.documentBytes(try encoder.encode(value))
        try file.withLock { _ = try file.replaceContents(with: bytes) }
      }
    } catch {
      StandardStreams.writeLine("failed \(error)")
      return 1
    }
    StandardStreams.writeLine("acked \(version)")
  }
}
