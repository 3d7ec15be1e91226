import CCSync
import CCSyncJSON
import CCSyncProcesses
import Foundation

/// `register-ops FILE PROCESS COUNT SEED [--durable-reads]`: COUNT random operations on the
/// number at `register` in FILE through `SharedDocument`, for the linearizability tests: reads
/// (`read()`, or with `--durable-reads` an `update { }` that changes nothing, which makes the
/// version it read durable before it returns), writes of values unique to this process (`replace(with:)`) and
/// compare-and-swaps (`update { }` that changes the value only when it is the expected one).
/// Prints `ready`, then for each operation `invoke ID KIND ARGUMENTS... NANOSECONDS` before
/// the call and `return ID ok [VALUE] NANOSECONDS` or `return ID fail NANOSECONDS` after it,
/// on the system-wide monotonic clock, so that the lines of several processes make one
/// history. Exits 1 with `failed DESCRIPTION` when a call throws.
func runRegisterOperations(_ arguments: [String]) -> Int32 {
  guard arguments.count >= 4, let process = Int64(arguments[1]), let count = Int(arguments[2]), let seed = UInt64(arguments[3]) else {
    FileHandle.standardError.write(Data("usage: register-ops FILE PROCESS COUNT SEED [--durable-reads]\n".utf8))
    return 64
  }
  let document = SharedDocument(path: arguments[0], logger: .silent)
  let durableReads = arguments.contains("--durable-reads")
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
        let value = durableReads ? try document.update { json in register(json) } : register(try document.read())
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
