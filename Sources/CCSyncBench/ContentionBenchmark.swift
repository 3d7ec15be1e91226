import Synchronization
import CCSync
import CCSyncProcesses
import Foundation

/// `ccsync-bench bench-worker FILE [--relaxed] [--threads T] [--api document|file|storage] [--instances I] [--keep N] [--schema FILE]`: one
/// contender of the locked read-modify-write benchmark, kept running for several trials. It
/// prints `ready` once set up; then, for each line `N` it reads on standard input, it adds
/// one to the document's top-level `counter` N times, each an exact locked read-modify-write,
/// and prints `done`. It exits when standard input ends.
///
/// - `--relaxed`: `SharedDocument(path:durable: false)` (no `fsync`); durable by default.
/// - `--threads T`: T threads of this process share each trial's N updates (N / T each), all
///   through one `SharedDocument`, so the library's group commit can batch them.
/// - `--api file`: `SharedFile.withLockedFile`, the counter's digits edited in the text as the
///   C floor does (no JSON): the library's protocol layer alone.
/// - `--instances I`: I `SharedDocument`s on the file, used in turn (document API): each update
///   then reads a version another instance wrote, as under contention, but in one process and
///   in a fixed order (for a repeatable profile of the contended path).
/// - `--api storage`: a typed `CodableStorage<CounterSettings>` and `update { $0.counter += 1 }`
///   instead of `SharedDocument.update` on the JSON tree.
/// - `--keep N`: the file's history keeps N versions (0 turns it off; default 20).
/// - `--schema FILE`: every write is checked against that JSON Schema (the gate).
///
/// FILE may be an etcd key, `etcd://HOST:PORT/KEY` (document API only): the etcd section's
/// kept-alive contender, each update a range and a compare-and-swap as the C floor's
/// (`bench/peers/etcd_floor.c`). It reads the key once before `ready`, so that its connection
/// is made before the clock starts, as the floor's is.
enum ContentionBenchmark {
  static let usage = "USAGE: ccsync-bench bench-worker FILE [--relaxed] [--threads T] [--api document|file|storage] [--instances I] [--keep N] [--schema FILE]"

  /// The typed view of the benchmark document: only the counter; the other settings are
  /// keys this type does not know, which the library keeps.
  struct CounterSettings: Codable, Sendable {
    var counter = 0
  }

  static func run(arguments: [String]) {
    guard let path = arguments.first, !path.hasPrefix("-") else { BenchmarkProcess.fail(usage, code: 64) }
    let durable = !arguments.contains("--relaxed")
    let threads = BenchmarkProcess.option("--threads", in: arguments).flatMap { Int($0) } ?? 1
    let api = BenchmarkProcess.option("--api", in: arguments) ?? "document"
    let instances = BenchmarkProcess.option("--instances", in: arguments).flatMap { Int($0) } ?? 1
    // `--keep N`: the file's history keeps N versions (0: off); `--schema FILE`: every write
    // is checked against that schema.
    let keep = BenchmarkProcess.option("--keep", in: arguments).flatMap { Int($0) }
    let gate = BenchmarkProcess.option("--schema", in: arguments).map { DocumentGate(schema: .file(path: $0)) } ?? .standard
    if let keep {
      do {
        try SharedDocument(path: path).setHistoryLimit(keep)
      } catch {
        BenchmarkProcess.fail("cannot set the history limit: \(error)", code: 74)
      }
    }
    guard threads > 0, instances > 0 else { BenchmarkProcess.fail(usage, code: 64) }

    let increment: @Sendable () throws -> Void
    switch api {
    case "document":
      let documents = (0..<instances).map { _ in document(at: path, durable: durable, gate: gate) }
      if path.hasPrefix("etcd://") {
        do {
          _ = try documents.first?.read()  // connected before the clock starts, as the floor is
        } catch {
          BenchmarkProcess.fail("cannot read '\(path)': \(error)", code: 74)
        }
      }
      let turn = Atomic<Int>(0)
      let counter = JSONPath(tokens: ["counter"])
      increment = {
        let document = documents[turn.add(1, ordering: .relaxed).oldValue % documents.count]
        try document.update { json in
          guard let value = try json.value(at: counter)?.numberValue?.int64Value else {
            throw StorageError.decodingFailed(path: path, message: "no integer 'counter'")
          }
          try json.setValue(.number(JSONNumber(value + 1)), at: counter)
        }
      }
    case "file":
      let file = SharedFile(path: path, durable: durable)
      increment = {
        try file.withLockedFile { locked in
          guard let snapshot = try locked.read(), let bytes = CounterText.incremented(snapshot.bytes) else {
            throw StorageError.decodingFailed(path: path, message: "no integer 'counter'")
          }
          try locked.replaceContents(with: bytes)
        }
      }
    case "storage":
      let storage = CodableStorage(
        defaultValue: CounterSettings(), path: path, updateMode: .manual,
        options: StorageOptions(durable: durable, watchesForChanges: false, flushesAtExit: false))
      increment = { try storage.update { $0.counter += 1 } }
    default:
      BenchmarkProcess.fail(usage, code: 64)
    }

    BenchmarkProcess.say("ready")
    while let line = readLine() {
      guard let count = Int(line), count > 0, count % threads == 0 else {
        BenchmarkProcess.fail("expected a count that is a multiple of \(threads), got '\(line)'", code: 64)
      }
      let failures = runConcurrently(threads: threads, iterations: count / threads, increment)
      if let failure = failures.first { BenchmarkProcess.fail("update failed: \(failure)") }
      BenchmarkProcess.say("done")
    }
  }

  /// The document at `location`: a file's path, or `etcd://HOST:PORT/KEY`.
  private static func document(at location: String, durable: Bool, gate: DocumentGate) -> SharedDocument {
    guard location.hasPrefix("etcd://") else { return SharedDocument(path: location, durable: durable, gate: gate) }
    do {
      return SharedDocument(etcd: try EtcdLocation(url: location), gate: gate)
    } catch {
      BenchmarkProcess.fail("\(error)", code: 64)
    }
  }

  /// The floor's edit (`bench/peers/floor.c`): the digits after the first `"counter"` key,
  /// incremented in the text, with no parser.
  enum CounterText {
    static func incremented(_ bytes: [UInt8]) -> [UInt8]? {
      bytes.withUnsafeBufferPointer { text -> [UInt8]? in
        let key: StaticString = "\"counter\""
        let needle = UnsafeBufferPointer(start: key.utf8Start, count: key.utf8CodeUnitCount)
        guard text.count >= needle.count,
              let found = (0...(text.count - needle.count)).first(where: { start in
                text[start] == needle[0] && memcmp(text.baseAddress! + start, needle.baseAddress!, needle.count) == 0
              })
        else { return nil }
        var digits = found + needle.count
        while digits < text.count, text[digits] == UInt8(ascii: " ") || text[digits] == UInt8(ascii: ":") { digits += 1 }
        var end = digits
        var value: UInt64 = 0
        while end < text.count, text[end] >= UInt8(ascii: "0"), text[end] <= UInt8(ascii: "9") {
          value = value * 10 + UInt64(text[end] - UInt8(ascii: "0"))
          end += 1
        }
        guard end > digits else { return nil }
        var number: [UInt8] = []
        var rest = value + 1
        repeat {
          number.append(UInt8(ascii: "0") + UInt8(rest % 10))
          rest /= 10
        } while rest > 0
        var result = [UInt8]()
        result.reserveCapacity(text.count + 1)
        result.append(contentsOf: UnsafeBufferPointer(rebasing: text[..<digits]))
        result.append(contentsOf: number.reversed())
        result.append(contentsOf: UnsafeBufferPointer(rebasing: text[end...]))
        return result
      }
    }
  }

  /// Runs `body` `iterations` times on each of `threads` threads (the calling thread is one
  /// of them) and returns the errors thrown; a thread stops at its first error.
  static func runConcurrently(threads: Int, iterations: Int, _ body: @escaping @Sendable () throws -> Void) -> [String] {
    let messages = Protected<[String]>([])
    let work: @Sendable () -> Void = {
      do {
        for _ in 0..<iterations { try body() }
      } catch {
        messages.withLock { $0.append("\(error)") }
      }
    }
    let group = DispatchGroup()
    for _ in 1..<threads {
      group.enter()
      let thread = Thread {
        work()
        group.leave()
      }
      thread.start()
    }
    work()
    group.wait()
    return messages.withLock { $0 }
  }
}
