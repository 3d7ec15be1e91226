import CCSync
import CCSyncProcesses
import Foundation
import Synchronization

/// The settings type the multi-process tests share. `counter` is what `increment` bumps.
struct HelperSettings: Codable, Sendable, Equatable {
  var theme = "light"
  var fontSize = 13
  var counter = 0
  var tags: [String] = []
}

/// Parses an update mode: `idle:SECONDS`, `throttled:SECONDS`, `immediate`, `manual`.
func parseUpdateMode(_ text: String) -> UpdateMode? {
  let parts = text.split(separator: ":", maxSplits: 1).map(String.init)
  switch parts[0] {
  case "idle": return parts.count == 2 ? Double(parts[1]).map { UpdateMode.afterIdle(.seconds($0)) } : .afterIdle
  case "throttled": return parts.count == 2 ? Double(parts[1]).map { UpdateMode.throttled(.seconds($0)) } : nil
  case "immediate": return .immediate
  case "manual": return .manual
  default: return nil
  }
}

/// Where FILE points: an `etcd://[HOST:PORT,...]/KEY` URL (parsed as the library parses it,
/// `$ETCDCTL_ENDPOINTS` and `$ETCDCTL_USER` included) or a file path.
func helperLocation(_ argument: String) -> StorageLocation? {
  guard argument.hasPrefix("etcd://") else { return .path(argument) }
  do {
    return .etcd(try EtcdLocation(url: argument))
  } catch {
    FileHandle.standardError.write(Data("\(error)\n".utf8))
    return nil
  }
}

/// `increment FILE COUNT [relaxed]`: COUNT exact `update { counter += 1 }` calls. FILE may be
/// an `etcd://` URL.
func runIncrement(_ arguments: [String]) -> Int32 {
  guard arguments.count >= 2, let count = Int(arguments[1]), let location = helperLocation(arguments[0]) else {
    FileHandle.standardError.write(Data("usage: increment FILE|etcd://HOSTS/KEY COUNT [relaxed]\n".utf8))
    return 64
  }
  let durable = !(arguments.count > 2 && arguments[2] == "relaxed")
  let storage = CodableStorage(
    defaultValue: HelperSettings(), location: location, updateMode: .manual,
    options: StorageOptions(durable: durable, watchesForChanges: false))
  do {
    for _ in 0..<count { try storage.update { $0.counter += 1 } }
  } catch {
    FileHandle.standardError.write(Data("increment failed: \(error)\n".utf8))
    return 1
  }
  print("done")
  return 0
}

/// `session FILE MODE`: a long-lived process driven by lines on stdin, answering each with a
/// line on stdout, so tests can act at exact points:
/// `set FIELD VALUE` (theme, fontSize, counter), `get` (prints the value as compact JSON),
/// `observed` (the value the last observer call carried, `observed none` before any),
/// `increment` (one `update { counter += 1 }`, prints `counted N`), `save`, `flush`,
/// `load`, `pending` (prints true/false), `exit`. FILE may be an `etcd://` URL.
func runSession(_ arguments: [String]) -> Int32 {
  guard arguments.count >= 2, let mode = parseUpdateMode(arguments[1]), let location = helperLocation(arguments[0]) else {
    FileHandle.standardError.write(Data("usage: session FILE|etcd://HOSTS/KEY MODE\n".utf8))
    return 64
  }
  let storage = CodableStorage(defaultValue: HelperSettings(), location: location, updateMode: mode)
  let encoder = JSONValueEncoder()
  @Sendable func render(_ value: HelperSettings) -> String {
    (try? encoder.encode(value).formatted(.compact)) ?? "?"
  }
  let observed = Mutex<HelperSettings?>(nil)
  let observation = storage.observe { change in observed.withLock { $0 = change.value } }
  defer { observation.cancel() }
  StandardStreams.writeLine("ready \(render(storage.wrappedValue))")
  while let line = readLine() {
    let words = line.split(separator: " ", maxSplits: 2).map(String.init)
    guard let command = words.first else { continue }
    do {
      switch command {
      case "set" where words.count == 3:
        switch words[1] {
        case "theme": storage.wrappedValue.theme = words[2]
        case "fontSize": storage.wrappedValue.fontSize = Int(words[2]) ?? 0
        case "counter": storage.wrappedValue.counter = Int(words[2]) ?? 0
        default: StandardStreams.writeLine("error unknown field"); continue
        }
        StandardStreams.writeLine("ok")
      case "get": StandardStreams.writeLine("value \(render(storage.wrappedValue))")
      case "observed": StandardStreams.writeLine("observed \(observed.withLock { $0 }.map(render) ?? "none")")
      case "increment":
        let counter = try storage.update { value -> Int in
          value.counter += 1
          return value.counter
        }
        StandardStreams.writeLine("counted \(counter)")
      case "load": try storage.load(); StandardStreams.writeLine("ok")
      case "save": try storage.save(); StandardStreams.writeLine("ok")
      case "flush": try storage.flush(); StandardStreams.writeLine("ok")
      case "pending": StandardStreams.writeLine("pending \(storage.hasPendingChanges)")
      case "exit": return 0
      default: StandardStreams.writeLine("error unknown command")
      }
    } catch {
      StandardStreams.writeLine("failed \(error)")
    }
  }
  return 0
}

/// `churn FILE`: saves alternating complete documents forever (until killed), each a valid
/// JSON document of a different size, so a kill at any instant can be checked for tearing.
func runChurn(_ arguments: [String]) -> Int32 {
  guard let path = arguments.first else { return 64 }
  let document = SharedDocument(path: path)
  var round = 0
  while true {
    round += 1
    let filler = String(repeating: round % 2 == 0 ? "x" : "yy", count: 500 + (round % 7) * 300)
    do {
      try document.replace(with: .object(JSONObject([("round", .number(JSONNumber(round))), ("filler", .string(filler))])))
    } catch {
      FileHandle.standardError.write(Data("churn failed: \(error)\n".utf8))
      return 1
    }
    if round == 1 { StandardStreams.writeLine("started") }
  }
}

/// `release-then-exit FILE`: a storage with a pending edit (theme "released"), driven by lines
/// on stdin: `release` drops its last reference on another thread (its deinit flushes), `exit`
/// calls `exit(0)` on the main thread, whatever that flush is doing.
func runReleaseThenExit(_ arguments: [String]) -> Int32 {
  guard let path = arguments.first else { return 64 }
  final class Holder: @unchecked Sendable {
    var storage: CodableStorage<HelperSettings>?
  }
  let holder = Holder()
  holder.storage = CodableStorage(
    defaultValue: HelperSettings(), path: path, updateMode: .manual, options: StorageOptions(watchesForChanges: false))
  holder.storage?.wrappedValue.theme = "released"
  StandardStreams.writeLine("ready")
  while let line = readLine() {
    switch line {
    case "release":
      Thread.detachNewThread { holder.storage = nil }
      StandardStreams.writeLine("ok")
    case "exit":
      exit(0)
    default:
      StandardStreams.writeLine("error unknown command")
    }
  }
  return 0
}

/// `pending-pair FILE1 FILE2`: two storages (`idle:60`), each with a pending edit (theme
/// "pending"), waiting for a signal or for standard input to close.
func runPendingPair(_ arguments: [String]) -> Int32 {
  guard arguments.count == 2 else { return 64 }
  let storages = arguments.map { CodableStorage(defaultValue: HelperSettings(), path: $0, updateMode: .afterIdle(.seconds(60))) }
  for storage in storages { storage.wrappedValue.theme = "pending" }
  StandardStreams.writeLine("ready")
  while readLine() != nil {}
  withExtendedLifetime(storages) {}
  return 0
}
