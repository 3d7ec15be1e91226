import CCSyncJSON
import CCSyncSystem

extension EtcdClient {
  /// Starts watching a key or range (`/v3/watch` with a `create_request`), on a connection
  /// of its own, and returns once the member confirmed the watch (`created`).
  ///
  /// Creating a watch changes nothing, so it fails over like a read: a member that does not
  /// confirm within ``Configuration/attemptTimeout`` is left for the next.
  /// - Parameters:
  ///   - range: one key, a prefix, or `[key, end)`.
  ///   - startRevision: report changes from this revision on (older ones first, in one or
  ///     more messages); `nil` for changes after the watch is created. Resuming after
  ///     revision R seen: `R + 1`.
  ///   - progressNotify: ask for progress notifications (empty messages with the current
  ///     revision) while nothing changes.
  ///   - previousValues: include each key's value before the change.
  ///   - deadline: how long creating may take, instead of the configuration's deadline.
  /// - Returns: the stream; a start revision that was compacted shows as
  ///   ``EtcdError/compacted(endpoint:revision:)`` from its first
  ///   ``EtcdWatchStream/next(timeout:)``.
  /// - Throws: ``EtcdError/permissionDenied(endpoint:message:)`` when the member refuses the
  ///   watch even with a token just asked for, ``EtcdError/authenticationFailed(endpoint:message:)``,
  ///   the failover errors.
  package func watch(
    _ range: EtcdKeyRange, startRevision: Int64? = nil, progressNotify: Bool = true, previousValues: Bool = false,
    deadline: Duration? = nil
  ) throws(EtcdError) -> EtcdWatchStream {
    var create = EtcdRequestWriter(capacity: EtcdRequestWriter.capacity(for: range.key, range.end ?? []))
    create.beginObject("create_request")
    create.keyRange(range)
    if let startRevision { create.int64("start_revision", startRevision) }
    if progressNotify { create.bool("progress_notify", true) }
    if previousValues { create.bool("prev_kv", true) }
    create.endObject()
    let call = Call(operation: "watch", path: "/v3/watch", body: create.finished(), isWrite: false, deadline: deadline)
    return try withEndpoints(call) { endpoint, deadline, token in
      let request = HTTPRequest(path: call.path, headers: EtcdClient.headers(token: token), body: call.body)
      let response: HTTPStreamingResponse
      do throws(HTTPError) {
        response = try http.openStream(
          request, to: endpoint, deadline: deadline, maximumMessageSize: configuration.maximumReplySize)
      } catch {
        return transportFailure(error, of: call)
      }
      return confirmCreated(response, from: endpoint, deadline: deadline, call: call)
    }
  }

  /// Reads a new watch stream's first message: the `created` confirmation, or the error
  /// that refused the watch.
  private func confirmCreated(
    _ response: HTTPStreamingResponse, from member: HTTPEndpoint, deadline: ContinuousClock.Instant, call: Call
  ) -> Attempt<EtcdWatchStream> {
    let endpoint = member.description
    do throws(HTTPError) {
      if response.head.status != 200 {
        // Refused before the stream began: one error object, like a unary call's.
        let body = try response.readRemainingBody(deadline: deadline)
        response.close()
        switch EtcdReply(body: body, status: response.head.status) {
        case .failure(let error): return serverFailure(error, from: member, of: call)
        case .success, .malformed:
          return .failed(EtcdEndpointFailure(endpoint: endpoint, reason: "HTTP status \(response.head.status)"))
        }
      }
      guard let message = try response.nextMessage(deadline: deadline) else {
        return .failed(EtcdEndpointFailure(endpoint: endpoint, reason: "the stream ended before the watch was created"))
      }
      let decoded: EtcdWatchMessage
      do throws(MalformedReply) {
        guard let scanned = try EtcdWatchMessage.decodeReply(message, inStream: true) else {
          response.close()
          guard case .failure(let error) = EtcdReply(body: message, status: 200) else {
            return .failed(EtcdEndpointFailure(endpoint: endpoint, reason: "malformed reply: an error member the client cannot read"))
          }
          return serverFailure(error, from: member, of: call)
        }
        decoded = scanned
      } catch {
        response.close()
        return .failed(EtcdEndpointFailure(endpoint: endpoint, reason: "malformed reply: \(error.detail)"))
      }
      let control = decoded.control
      if control.canceled {
        response.close()
        let error = control.cancellationError(endpoint: endpoint)
        // A token the member no longer knows (it restarted: simple tokens live in its
        // memory) is refused as `invalid auth token` by etcd 3.4, but as `permission
        // denied` by 3.5, which checks a watch's token only as part of its permission.
        // Either way authenticate again once; refused with a fresh token too, the user
        // may not read the range.
        switch error {
        case .authenticationFailed, .permissionDenied: return .invalidToken(error)
        default: return .fatal(error)
        }
      }
      guard control.created else {
        response.close()
        return .failed(EtcdEndpointFailure(endpoint: endpoint, reason: "the first message did not confirm the watch"))
      }
      return .answered(EtcdWatchStream(response: response, createdRevision: decoded.response.revision))
    } catch {
      response.close()
      return transportFailure(error, of: call)
    }
  }
}
