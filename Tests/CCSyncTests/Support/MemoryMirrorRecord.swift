@testable import CCSync
import CCSyncJSON
import CCSyncSystem

/// A mirror's record kept in memory (a third ``MirrorRecordStore`` beside the file one of
/// `ccsync mirror`): what a mirror saved outlives the mirror, as a state file outlives its
/// process, so a second mirror of the same record is the next run after a crash. The pair is
/// claimed by one mirror at a time. Counts the loads, one per sync that read both sides.
///
/// `Sendable`: every field is behind a `Protected`.
final class MemoryMirrorRecord: MirrorRecordStore {
  private struct State {
    var record: MirrorHistory.Record?
    var claimed = false
    var loads = 0
    var saves: [MirrorHistory.Record] = []
  }

  private let state = Protected(State())

  /// What was last saved (`nil`: nothing, or an empty record).
  var record: MirrorHistory.Record? { state.withLock(\.record) }
  /// How many times a mirror loaded the record: once per sync that read both sides.
  var loads: Int { state.withLock(\.loads) }
  /// Every record saved, in order.
  var saves: [MirrorHistory.Record] { state.withLock(\.saves) }

  func load() throws(StorageError) -> MirrorHistory.Record? {
    state.withLock { state in
      state.loads += 1
      return state.record
    }
  }

  func save(_ record: MirrorHistory.Record) throws(StorageError) {
    state.withLock { state in
      state.saves.append(record)
      state.record = record.agreed == nil && record.pending == nil ? nil : record
    }
  }

  func claim() throws(StoreError) -> any MirrorPairClaim {
    let taken = state.withLock { state -> Bool in
      defer { state.claimed = true }
      return state.claimed
    }
    if taken { throw .lockUnavailable(path: "memory mirror record") }
    return Claim { [state] in state.withLock { $0.claimed = false } }
  }

  /// A claim of the record, released once.
  private final class Claim: MirrorPairClaim {
    private var onRelease: (() -> Void)?

    init(onRelease: @escaping () -> Void) {
      self.onRelease = onRelease
    }

    func release() {
      onRelease?()
      onRelease = nil
    }
  }
}
