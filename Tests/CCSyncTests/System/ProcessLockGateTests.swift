import Foundation
import Testing
@testable import CCSyncSystem

/// The in-process readers-writer gate every file lock passes first.
@Suite struct ProcessLockGateTests {
  /// A writer that gives up waiting lets in the readers it was holding back at once, not
  /// only when the holder next leaves (which may be never, if the holder waits for them).
  @Test func aWriterThatTimesOutLetsTheReadersItHeldBackIn() throws {
    let gate = ProcessLockGate()
    #expect(gate.enter(exclusive: false, deadline: nil) == .entered)
    defer { gate.leave(exclusive: false) }
    let writer = BackgroundThread { gate.enter(exclusive: true, deadline: .now + .milliseconds(300)) }
    #expect(waitUntil { gate.waitingWriters == 1 })
    // Waits behind the writer, as readers do so that writers are not starved.
    let reader = BackgroundThread { () -> ProcessLockGate.Entry in
      let entry = gate.enter(exclusive: false, deadline: nil)
      if entry == .entered { gate.leave(exclusive: false) }
      return entry
    }
    #expect(try writer.value() == .timedOut)
    // The first holder is still in: only the writer's leaving can have let the reader in.
    #expect(try reader.value(deadline: .seconds(5)) == .entered)
  }
}
