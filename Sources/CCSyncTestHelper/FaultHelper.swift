import CCSync
import CCSyncProcesses
import CCSyncSystem
import Foundation

// Commands of the fault suite (Tests/CCSyncTests/Fault*.swift). Each prints its result line
// only after the library call returned, so a test that kills the process knows exactly
// which calls had returned success.

/// Waits until the file at `path` exists, polling with `stat`: the test attaches strace to
/// this process meanwhile, and polling (unlike a blocked `read`) leaves no traced system call
/// half done at the moment strace attaches. A helper whose test went away without creating
/// the file gives up after two minutes (exit 75) instead of polling forever.
private func waitForGoFile(_ arguments: [String]) {
  guard let index = arguments.firstIndex(of: "--go"), index + 1 < arguments.count else { return }
  StandardStreams.writeLine("ready")
  let path = arguments[index + 1]
  let deadline = ContinuousClock.now + .seconds(120)
  while !FileManager.default.fileExists(atPath: path) {
    if ContinuousClock.now > deadline {
      StandardStreams.writeLine("failed no go file at \(path)", toStandardError: true)
      exit(75)
    }
    ContinuousClock.sleepThread(for: .milliseconds(1))
  }
}

private func fail(_ error: any Error) -> Int32 {
  StandardStreams.writeLine("failed \(error)")
  return 1
}

/// `save-once FILE JSON [--go PATH]`: one durable `SharedDocument.replace(with:)` of the
/// document JSON; prints `saved` after it returned, or `failed DESCRIPTION` (exit 1).
/// With `--go`, prints `ready` first and waits for PATH to exist.
func runSaveOnce(_ arguments: [String]) -> Int32 {
  guard arguments.count >= 2 else {
    FileHandle.standardError.write(Data("usage: save-once FILE JSON [--go PATH]\n".utf8))
    return 64
  }
  let value: JSONValue
  do { value = try JSONValue(parsing: Array(arguments[1].utf8)) } catch { return fail(error) }
  let document = SharedDocument(path: arguments[0])
  waitForGoFile(arguments)
  do {
    try document.replace(with: value)
  } catch {
    return fail(error)
  }
  StandardStreams.writeLine("saved")
  return 0
}

/// `update-once FILE [--go PATH]`: one exact `update { counter += 1 }` through
/// `SharedDocument`; prints `updated N` after it returned, or `failed DESCRIPTION`.
func runUpdateOnce(_ arguments: [String]) -> Int32 {
  guard let path = arguments.first else { return 64 }
  let document = SharedDocument(path: path)
  waitForGoFile(arguments)
  do {
    let counter = try document.update { json in incrementCounter(&json) }
    StandardStreams.writeLine("updated \(counter)")
    return 0
  } catch {
    return fail(error)
  }
}

/// `update-loop FILE [--storage]`: prints `ready`, then exact `update { counter += 1 }` calls
/// forever (until killed), printing `counted N` after each returned. Through `SharedDocument`,
/// each write also changes a filler field's length, so a torn write could not pass for a
/// valid document; with `--storage`, through a watching `.immediate` `CodableStorage`, which
/// also sets `theme` between updates (written at once, in place edits through the wrapper).
func runUpdateLoop(_ arguments: [String]) -> Int32 {
  guard let path = arguments.first else { return 64 }
  if arguments.contains("--storage") {
    let storage = CodableStorage(defaultValue: HelperSettings(), path: path, updateMode: .immediate)
    StandardStreams.writeLine("ready")
    while true {
      do {
        let counter = try storage.update { value -> Int in
          value.counter += 1
          return value.counter
        }
        StandardStreams.writeLine("counted \(counter)")
        storage.wrappedValue.theme = counter % 2 == 0 ? "even" : "odd"
      } catch {
        return fail(error)
      }
    }
  }
  let document = SharedDocument(path: path)
  StandardStreams.writeLine("ready")
  while true {
    do {
      let counter = try document.update { json in incrementCounter(&json) }
      StandardStreams.writeLine("counted \(counter)")
    } catch {
      return fail(error)
    }
  }
}

/// `counter += 1` on a JSON document (`{}` or a non-object counts from 0); also sets `filler`
/// to a string whose length varies with the counter. Returns the new counter.
func incrementCounter(_ json: inout JSONValue) -> Int64 {
  let counter = (json.objectValue?["counter"]?.numberValue?.int64Value ?? 0) + 1
  var object = json.objectValue ?? JSONObject()
  object["counter"] = .number(JSONNumber(counter))
  object["filler"] = .string(String(repeating: counter % 2 == 0 ? "e" : "o", count: 100 + Int(counter % 13) * 250))
  json = .object(object)
  return counter
}

/// `read-document FILE`: loads FILE as the helper's settings through `CodableStorage`
/// (parse, then decode over the defaults); prints `valid`, `missing`, `invalid DESCRIPTION`
/// (not JSON, or not readable) or `undecodable DESCRIPTION` (JSON of the wrong shape), then
/// `maxrss KB`, the peak resident set size. Run as a child so that hostile input that
/// crashed the parser could not take the test runner down with it.
func runReadDocument(_ arguments: [String]) -> Int32 {
  guard let path = arguments.first else { return 64 }
  let storage = CodableStorage(
    defaultValue: HelperSettings(), path: path, updateMode: .manual,
    options: StorageOptions(watchesForChanges: false, flushesAtExit: false, logger: .silent))
  do {
    try storage.load()
    StandardStreams.writeLine(storage.fileState == .missing ? "missing" : "valid")
  } catch StorageError.decodingFailed(_, let message) {
    StandardStreams.writeLine("undecodable \(message.prefix(300))")
  } catch {
    StandardStreams.writeLine("invalid \(String(describing: error).prefix(300))")
  }
  var usage = rusage()
  getrusage(RUSAGE_SELF.rawValue, &usage)
  StandardStreams.writeLine("maxrss \(usage.ru_maxrss)")
  return 0
}

/// `mixed FILE SECONDS SEED`: a process of the concurrency test. For SECONDS it mixes, at
/// random, exact `update { counter += 1 }` calls, local edits of `theme` and `fontSize`
/// (written after a short idle delay), explicit `save()`s and short pauses, while its storage
/// reloads the others' writes. Then it flushes and prints `done INCREMENTS`, and answers each
/// `expect JSON` line on stdin with `converged` once its value equals JSON (or `diverged
/// VALUE` after 10 s); `exit` ends it.
func runMixed(_ arguments: [String]) -> Int32 {
  guard arguments.count == 3, let seconds = Double(arguments[1]), let seed = UInt64(arguments[2]) else {
    FileHandle.standardError.write(Data("usage: mixed FILE SECONDS SEED\n".utf8))
    return 64
  }
  let storage = CodableStorage(
    defaultValue: HelperSettings(), path: arguments[0], updateMode: .afterIdle(.milliseconds(20)),
    options: StorageOptions(flushesAtExit: false))
  var random = SplitMix64(seed: seed)
  var increments = 0
  let end = ContinuousClock.now + .seconds(seconds)
  StandardStreams.writeLine("ready")
  do {
    while ContinuousClock.now < end {
      switch Int.random(in: 0..<10, using: &random) {
      case 0..<4:
        try storage.update { $0.counter += 1 }
        increments += 1
      case 4, 5: storage.wrappedValue.theme = "theme-\(seed)-\(Int.random(in: 0..<100, using: &random))"
      case 6: storage.wrappedValue.fontSize = Int.random(in: 8...40, using: &random)
      case 7: try storage.save()
      default: ContinuousClock.sleepThread(for: .microseconds(Int.random(in: 0...3_000, using: &random)))
      }
    }
    try storage.flush()
  } catch {
    StandardStreams.writeLine("failed \(error)")
    return 1
  }
  StandardStreams.writeLine("done \(increments)")
  let encoder = JSONValueEncoder()
  while let line = readLine() {
    guard line.hasPrefix("expect "), let expected = try? JSONValue(parsing: Array(line.dropFirst(7).utf8)) else { break }
    let deadline = ContinuousClock.now + .seconds(10)
    var current = try? encoder.encode(storage.wrappedValue)
    while current != expected && ContinuousClock.now < deadline {
      ContinuousClock.sleepThread(for: .milliseconds(2))
      current = try? encoder.encode(storage.wrappedValue)
    }
    if current == expected {
      StandardStreams.writeLine("converged")
    } else {
      // What a failure needs to be understood: the file now, and the storage's own view.
      let file = (try? Data(contentsOf: URL(fileURLWithPath: arguments[0]))).map { String(decoding: $0, as: UTF8.self) } ?? "unreadable"
      StandardStreams.writeLine("diverged \(current?.formatted(.compact) ?? "?"); file now \(file.split(separator: "\n").joined()); "
        + "state \(storage.fileState), pending \(storage.hasPendingChanges), last error \(storage.lastError.map { "\($0)" } ?? "none")")
    }
  }
  return 0
}

