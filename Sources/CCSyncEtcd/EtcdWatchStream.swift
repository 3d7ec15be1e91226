import CCSyncJSON
import CCSyncSystem

/// A live watch: the changes to a key or range, read one message at a time with
/// ``next(timeout:)``, on a connection of its own.
///
/// It ends with an error, never by hanging: the member shutting down (the gateway's last
/// message is an error object, `transport is closing`), the connection breaking, the server
/// canceling the watch (``EtcdError/compacted(endpoint:revision:)`` when the start
/// revision was compacted), or ``EtcdWatchCanceller/cancel()``. After an end every call
/// throws the same error; watch again from the revision after the last one seen.
///
/// `Sendable`, so that it can be created on one thread and read on another: calls to
/// ``next(timeout:)`` take a lock, so concurrent readers take turns. Other threads stop it
/// with ``close()`` or through ``canceller``, which do not wait for a reader.
package final class EtcdWatchStream: Sendable {
  /// The member serving the watch, `host:port`.
  package let endpoint: String
  /// The store revision when the watch was created.
  package let createdRevision: Int64
  /// The stream and, once it ended, the error it ended with; locked while reading.
  private let state: Protected<(response: HTTPStreamingResponse, ending: EtcdError?)>
  /// Whether ``close()`` or the canceller stopped the watch (so its end is not an error
  /// of the server's).
  private let canceledByClient = Protected(false)
  /// Makes a blocked read return at once.
  private let interrupt: @Sendable () -> Void

  /// Wraps a stream whose `created` message has been read.
  init(response: HTTPStreamingResponse, createdRevision: Int64) {
    self.createdRevision = createdRevision
    endpoint = response.endpoint
    interrupt = response.interrupter
    state = Protected((response, nil))
  }

  /// The next message: events, or a progress notification.
  /// - Parameter timeout: how long to wait for one; `nil` waits as long as it takes. A
  ///   member that stopped answering (`SIGSTOP`) sends nothing, so a caller that must
  ///   notice uses a timeout (with progress notifications on, a quiet stream still sends
  ///   one every `--experimental-watch-progress-notify-interval`, 10 minutes by default).
  /// - Returns: `nil` when `timeout` passed with nothing; the stream stays usable.
  /// - Throws: ``EtcdError/watchEnded(endpoint:reason:)`` when the stream ended (member
  ///   shut down, connection broke, canceled by the client), the errors a canceled watch
  ///   ends with (``EtcdError/compacted(endpoint:revision:)``,
  ///   ``EtcdError/authenticationFailed(endpoint:message:)``, ...),
  ///   ``EtcdError/malformedReply(endpoint:detail:)``.
  package func next(timeout: Duration?) throws(EtcdError) -> EtcdWatchResponse? {
    try state.withLock { (state: inout (response: HTTPStreamingResponse, ending: EtcdError?)) throws(EtcdError) -> EtcdWatchResponse? in
      if let ending = state.ending { throw ending }
      do throws(EtcdError) {
        return try read(state.response, timeout: timeout)
      } catch {
        state.ending = error
        state.response.close()
        throw error
      }
    }
  }

  /// Reads messages until one to return; see ``next(timeout:)``. Throws the error that ends
  /// the stream.
  private func read(_ response: HTTPStreamingResponse, timeout: Duration?) throws(EtcdError) -> EtcdWatchResponse? {
    // "As long as it takes": a year is as good as for ever, and keeps the arithmetic finite.
    let deadline = ContinuousClock.now + (timeout ?? .seconds(365 * 24 * 3600))
    while true {
      let message: [UInt8]?
      do throws(HTTPError) {
        message = try response.nextMessage(deadline: deadline)
      } catch {
        if error.isTimeout, !canceledByClient.withLock({ $0 }) { return nil }
        throw .watchEnded(endpoint: endpoint, reason: canceledByClient.withLock { $0 } ? "canceled by the client" : error.reason)
      }
      guard let message else {
        let reason = canceledByClient.withLock { $0 } ? "canceled by the client" : "the server ended the stream"
        throw .watchEnded(endpoint: endpoint, reason: reason)
      }
      let decoded: EtcdWatchMessage?
      do throws(MalformedReply) {
        decoded = try EtcdWatchMessage.decodeReply(message, inStream: true)
      } catch {
        throw .malformedReply(endpoint: endpoint, detail: error.detail)
      }
      guard let decoded else {
        // An error object ends the stream. A member shutting down sends code 14 `transport
        // is closing`, or (1 run in 25 under load) code 1 `grpc: the client connection is
        // closing`; both are ends of the stream, not errors of the watch.
        guard case .failure(let error) = EtcdReply(body: message, status: 200) else {
          throw .malformedReply(endpoint: endpoint, detail: "an error member the client cannot read")
        }
        let failure = error.error(endpoint: endpoint)
        if case .server = failure {
          throw .watchEnded(endpoint: endpoint, reason: "\(error.message) (gRPC \(EtcdError.codeName(error.code)))")
        }
        throw failure
      }
      if decoded.control.canceled { throw decoded.control.cancellationError(endpoint: endpoint) }
      // Another `created` would be a second watch on this stream, which this client never
      // asks for.
      if decoded.control.created && decoded.response.events.isEmpty { continue }
      return decoded.response
    }
  }

  /// A handle other threads use to stop the watch.
  package var canceller: EtcdWatchCanceller {
    EtcdWatchCanceller(flag: canceledByClient, interrupt: interrupt)
  }

  /// Stops the watch and closes its connection; later calls throw
  /// ``EtcdError/watchEnded(endpoint:reason:)``. A reader blocked in another thread
  /// returns at once.
  package func close() {
    canceller.cancel()
    state.withLock { state in
      state.response.close()
      if state.ending == nil { state.ending = .watchEnded(endpoint: endpoint, reason: "canceled by the client") }
    }
  }
}

/// Stops a watch from any thread: its reader's ``EtcdWatchStream/next(timeout:)`` returns
/// at once with ``EtcdError/watchEnded(endpoint:reason:)``. `Sendable`.
package struct EtcdWatchCanceller: Sendable {
  /// The stream's "canceled by the client" flag.
  fileprivate let flag: Protected<Bool>
  /// Makes the stream's blocked read return at once.
  fileprivate let interrupt: @Sendable () -> Void

  /// Stops the watch. Any number of times, from any thread, also after it ended.
  package func cancel() {
    flag.withLock { $0 = true }
    interrupt()
  }
}
