import CCSync
import CCSyncProcesses
import Foundation

/// The document the partition tests' increments share: the total, and for each host the
/// numbers of its increments that took effect, in the order they did.
struct PartitionCounter: Codable, Sendable {
  var counter = 0
  var applied: [String: [Int]] = [:]
}

/// `increment-log URL HOST COUNT`: COUNT increments numbered 1...COUNT through
/// `CodableStorage.update { }` on an etcd key, each adding 1 to `counter` and its number to
/// `applied[HOST]`, blindly (a second run of one increment would show twice). Prints
/// `ready`, then per increment `ok N` when acknowledged, or, when the update throws,
/// `error N MESSAGE` and the outcome learned by reading the key again: `settled N applied`
/// (counted, the next one follows) or `settled N not-applied` (the same number is tried
/// again), `unsettled N` when no read answered for 30 s (exit 3). `done` at the end.
func runIncrementLog(_ arguments: [String]) -> Int32 {
  guard arguments.count == 3, let location = helperLocation(arguments[0]), let count = Int(arguments[2]) else {
    FileHandle.standardError.write(Data("usage: increment-log etcd://HOSTS/KEY HOST COUNT\n".utf8))
    return 64
  }
  let host = arguments[1]
  let storage = CodableStorage(
    defaultValue: PartitionCounter(), location: location, updateMode: .manual, options: StorageOptions(watchesForChanges: false))
  StandardStreams.writeLine("ready")
  var number = 1
  while number <= count {
    do {
      try storage.update { value in
        value.counter += 1
        value.applied[host, default: []].append(number)
      }
      StandardStreams.writeLine("ok \(number)")
      number += 1
    } catch {
      StandardStreams.writeLine("error \(number) \("\(error)".replacingOccurrences(of: "\n", with: " "))")
      guard let applied = settle(storage, host: host, number: number) else {
        StandardStreams.writeLine("unsettled \(number)")
        return 3
      }
      StandardStreams.writeLine("settled \(number) \(applied ? "applied" : "not-applied")")
      if applied { number += 1 }
    }
  }
  StandardStreams.writeLine("done")
  return 0
}

/// Whether increment `number` of `host` took effect, read from the key (a linearizable
/// read), trying for 30 s; `nil` when no read answered.
private func settle(_ storage: CodableStorage<PartitionCounter>, host: String, number: Int) -> Bool? {
  let deadline = ContinuousClock.now + .seconds(30)
  while ContinuousClock.now < deadline {
    if (try? storage.load()) != nil {
      return storage.wrappedValue.applied[host]?.contains(number) == true
    }
    usleep(100_000)
  }
  return nil
}
