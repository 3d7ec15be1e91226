import Testing
@testable import CCSync
import CCSyncJSON

/// A `GroupCommit` request runs again each time its store plans the write again (a lost
/// compare-and-swap); what it reports is its last run's.
@Suite struct GroupCommitRequestTests {
  private struct Refused: Error {}

  /// How many times the closure ran. `@unchecked Sendable`: the test's thread alone uses it.
  private final class Runs: @unchecked Sendable {
    var count = 0
  }

  @Test func aRunThatThrowsLeavesNoResultFromTheRunBefore() {
    let runs = Runs()
    let request = GroupCommit.TypedRequest<Int>(invalidFile: .fail, missingFile: .create, writes: .whenChanged) { document, _ in
      runs.count += 1
      if runs.count == 2 { throw Refused() }
      document = ["run": .number(JSONNumber(integer: Int64(runs.count)))]
      return runs.count
    }
    var document: JSONValue = [:]

    request.run(on: &document, fileHeldDocument: true)
    #expect(request.result == 1)
    #expect(request.succeeded)

    var second = document
    request.run(on: &second, fileHeldDocument: true)
    #expect(request.result == nil)
    #expect(!request.succeeded)
    #expect(request.error is Refused)
    #expect(second == document)  // the throwing run's draft is not kept

    request.run(on: &document, fileHeldDocument: true)
    #expect(request.result == 3)
    #expect(request.succeeded)
    #expect(request.error == nil)
  }
}
