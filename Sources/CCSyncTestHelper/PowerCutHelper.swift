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

/// `register-ops FILE PROCESS COUNT SEED`: COUNT random operations on the number at
/// `register` in FILE through `SharedDocument`, for the linearizability test: reads
/// (`read()`), writes of values unique to this process (`replace(with:)`) and
/// compare-and-swaps (`update { }` that changes the value only when it is the expected one).
/// Prints `ready`, then for each operation `invoke ID KIND ARGUMENTS... NANOSECONDS` before
/// the call and `return ID ok [VALUE] NANOSECONDS` or `return ID fail NANOSECONDS` after it,
/// on the system-wide monotonic clock, so that the lines of several processes make one
/// history. Exits 1 with `failed DESCRIPTION` when a call throws.
func runRegisterOperations(_ arguments: [String]) -> Int32 {
  guard arguments.count == 4, let process = Int64(arguments[1]), let count = Int(arguments[2]), let seed = UInt64(arguments[3]) else {
    FileHandle.standardError.write(Data("usage: register-ops FILE PROCESS COUNT SEED\n".utf8))
    return 64
  }
  let document = SharedDocument(path: arguments[0], logger: .silent)
  var random = SplitMix64(seed: seed)
  var seen: [Int64] = [0]
  func now() -> Int64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
  }
  func register(_ json: JSONValue?) -> Int64 { json?.objectValue?["register"]?.numberValue?.int64Value ?? 0 }
  StandardStreams.writeLine("ready")
  do {
    for id in 0..<count {
      switch Int.random(in: 0..<3, using: &random) {
      case 0:
        StandardStreams.writeLine("invoke \(id) read \(now())")
        let value = register(try document.read())
        StandardStreams.writeLine("return \(id) ok \(value) \(now())")
        seen.append(value)
      case 1:
        let value = process * 1_000_000 + Int64(id) + 1
        StandardStreams.writeLine("invoke \(id) write \(value) \(now())")
        try document.replace(with: ["register": .number(JSONNumber(value))])
        StandardStreams.writeLine("return \(id) ok \(now())")
        seen.append(value)
      default:
        let expected = Int.random(in: 0..<10, using: &random) < 7 ? seen.last! : seen[Int.random(in: 0..<seen.count, using: &random)]
        let new = process * 1_000_000 + Int64(id) + 1
        StandardStreams.writeLine("invoke \(id) cas \(expected) \(new) \(now())")
        let swapped = try document.update { json -> Bool in
          guard register(json) == expected else { return false }
          json = ["register": .number(JSONNumber(new))]
          return true
        }
        StandardStreams.writeLine("return \(id) \(swapped ? "ok" : "fail") \(now())")
        if swapped { seen.append(new) }
      }
    }
  } catch {
    StandardStreams.writeLine("failed \(error)")
    return 1
  }
  return 0
}
