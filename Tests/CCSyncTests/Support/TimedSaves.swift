import Foundation
import Synchronization
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

/// What the helper's `timed-saves` writes: a sequence number, the writer's `MachineStamp`
/// just before the save (one stamp for every process on the machine), and a payload
/// that sets the document's size. Mirrors `TimedDocument` in the helper's ReloadHelper.swift.
struct TimedDocument: Codable, Sendable, Equatable {
  var sequence = -1
  var sentAt: Int64 = 0
  var payload = ""
}

/// One external change an observer heard: the writer's stamp and the moment it arrived, both
/// `MachineStamp` nanoseconds.
struct HeardSave: Sendable {
  var sentAt: Int64
  var receivedAt: Int64
}

/// A steady writer in another process: a helper child (`timed-saves`) saves a
/// `TimedDocument` of about `bytes` `saves` times, `interval` apart, through a
/// `CodableStorage`; this process holds another `CodableStorage` on the file and records each
/// external change its observer hears. A steady writer, not a flood: coalesced versions are
/// not heard.
/// - Returns: the changes heard, or `nil` when the writer did not finish within 120 s or its
///   last save was not heard within 10 s after.
func observeTimedSaves(
  in directory: String, bytes: Int, saves: Int = 200, interval: Duration = .milliseconds(5)
) throws -> [HeardSave]? {
  let path = directory + "/timed-\(bytes).json"
  let storage = CodableStorage(defaultValue: TimedDocument(), path: path, updateMode: .manual, options: watchingOptions)
  let heard = Protected<[HeardSave]>([])
  let lastSequence = Atomic<Int>(-1)
  let observation = storage.observe { change in
    let received = MachineStamp.now()
    guard change.origin == .external else { return }
    heard.withLock { $0.append(HeardSave(sentAt: change.value.sentAt, receivedAt: received)) }
    lastSequence.store(change.value.sequence, ordering: .releasing)
  }
  defer { observation.cancel() }
  let milliseconds = Int(interval.components.seconds * 1000 + interval.components.attoseconds / 1_000_000_000_000_000)
  let writer = try InteractiveChild(try testHelper(), ["timed-saves", path, "\(saves)", "\(bytes)", "\(milliseconds)"])
  guard writer.nextLine(startingWith: "ready") != nil else { return nil }
  writer.send("go")
  guard writer.nextLine(startingWith: "done", deadline: .seconds(120)) != nil,
        waitUntil(deadline: .seconds(10), { lastSequence.load(ordering: .acquiring) == saves - 1 }) else { return nil }
  _ = writer.finish()
  return heard.withLock { $0 }
}
