import CCSyncSystem
import CCSyncJSON

/// Observation: callbacks, async sequences and error handlers.
extension CodableStorage {
  /// Calls `handler` with every change to the value, once each, in order, with its origin:
  /// local sets and other processes' writes. The handler runs on the thread that made or
  /// noticed the change; it may set the value again.
  /// - Returns: keep it; releasing or cancelling it stops the calls.
  public func observe(_ handler: @escaping @Sendable (StorageChange<Value>) -> Void) -> StorageObservation {
    observers.add(handler)
  }

  /// The current value, then every later value, local or external. Each `for await` loop gets
  /// its own sequence; a slow consumer sees the newest value (older ones are dropped), and the
  /// last value it sees is always the latest. A change made while the sequence is being set
  /// up may show twice.
  public var values: AsyncStream<Value> {
    AsyncStream(bufferingPolicy: .bufferingNewest(1)) { continuation in
      // Observe first, then take the current value: a change in between is then delivered
      // after it (or repeats it), never lost behind it.
      let observation = observe { continuation.yield($0.value) }
      continuation.yield(wrappedValue)
      continuation.onTermination = { _ in observation.cancel() }
    }
  }

  /// Every change with its origin, as an async sequence. Nothing is dropped.
  public var changes: AsyncStream<StorageChange<Value>> {
    AsyncStream(bufferingPolicy: .unbounded) { continuation in
      let observation = observe { continuation.yield($0) }
      continuation.onTermination = { _ in observation.cancel() }
    }
  }

  /// Calls `handler` with every error: failed reads, decodes and writes (including automatic
  /// writes that will be retried).
  public func onError(_ handler: @escaping @Sendable (StorageError) -> Void) {
    errorHandlers.withLock { $0.append(handler) }
  }
}
