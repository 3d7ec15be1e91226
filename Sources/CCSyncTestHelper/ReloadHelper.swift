import CCSync
import CCSyncProcesses
import CCSyncSystem
import Foundation

/// The document `timed-saves` writes for the steady-writer test: a sequence number, the
/// writer's `MachineStamp` just before the save (a stamp every process on the machine
/// shares), and a payload that sets the document's size.
struct TimedDocument: Codable, Sendable, Equatable {
  var sequence = -1
  var sentAt: Int64 = 0
  var payload = ""
}

/// The payload that makes a `TimedDocument` about `bytes` long once written.
func timedPayload(bytes: Int) -> String {
  String(repeating: "x", count: max(0, bytes - 64))
}

/// `count-up FILE COUNT`: sets `counter` to 1, 2, ... COUNT through a `.immediate`
/// `CodableStorage`, one write each, as fast as it can; prints `done` at the end.
func runCountUp(_ arguments: [String]) -> Int32 {
  guard arguments.count == 2, let count = Int(arguments[1]) else {
    FileHandle.standardError.write(Data("usage: count-up FILE COUNT\n".utf8))
    return 64
  }
  let storage = CodableStorage(
    defaultValue: HelperSettings(), path: arguments[0], updateMode: .immediate,
    options: StorageOptions(watchesForChanges: false))
  for value in 1...max(1, count) { storage.wrappedValue.counter = value }
  guard storage.lastError == nil, !storage.hasPendingChanges else {
    FileHandle.standardError.write(Data("count-up failed: \(storage.lastError.map { "\($0)" } ?? "pending")\n".utf8))
    return 1
  }
  StandardStreams.writeLine("done")
  return 0
}

/// `timed-saves FILE COUNT BYTES INTERVAL_MS`: COUNT saves of a `TimedDocument` of about BYTES
/// through a `.immediate` `CodableStorage`, each stamped with `MachineStamp` just before the
/// save, INTERVAL_MS apart (a steady writer, not a flood that only measures queueing). Prints
/// `ready` and waits for a line on standard input before starting, so the observer can arm
/// its watch first. Prints `done` at the end.
func runTimedSaves(_ arguments: [String]) -> Int32 {
  guard arguments.count == 4, let count = Int(arguments[1]), let bytes = Int(arguments[2]),
        let interval = Int(arguments[3]) else {
    FileHandle.standardError.write(Data("usage: timed-saves FILE COUNT BYTES INTERVAL_MS\n".utf8))
    return 64
  }
  let storage = CodableStorage(
    defaultValue: TimedDocument(), path: arguments[0], updateMode: .manual,
    options: StorageOptions(watchesForChanges: false))
  let payload = timedPayload(bytes: bytes)
  StandardStreams.writeLine("ready")
  _ = readLine()
  for sequence in 0..<count {
    storage.wrappedValue = TimedDocument(sequence: sequence, sentAt: MachineStamp.now(), payload: payload)
    do {
      try storage.save()
    } catch {
      FileHandle.standardError.write(Data("timed-saves failed: \(error)\n".utf8))
      return 1
    }
    if interval > 0 { ContinuousClock.sleepThread(for: .milliseconds(interval)) }
  }
  StandardStreams.writeLine("done")
  return 0
}
