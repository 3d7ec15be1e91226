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
    var create = JSONObject(range.members)
    if let startRevision { create["start_revision"] = EtcdJSON.int64(startRevision) }
    if progressNotify { create["progress_notify"] = true }
    if previousValues { create["prev_kv"] = true }
    let body = JSONValue.object(JSONObject([("create_request", .object(create))])).formattedBytes(.compact)
    let call = Call(operation: "watch", path: "/v3/watch", body: .null, isWrite: false, deadline: deadline)
    return try withEndpoints(call) { endpoint, deadline, token in
      let request = HTTPRequest(path: call.path, headers: EtcdClient.headers(token: token), body: body)
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
      switch EtcdReply(body: message, status: 200) {
      case .failure(let error):
        response.close()
        return serverFailure(error, from: member, of: call)
      case .malformed(let detail):
        response.close()
        return .failed(EtcdEndpointFailure(endpoint: endpoint, reason: "malformed reply: \(detail)"))
      case .success(let object):
        let control: EtcdWatchControl
        let revision: Int64
        do throws(MalformedReply) {
          control = try EtcdWatchControl(json: object)
          revision = try object.headerRevision()
        } catch {
          response.close()
          return .failed(EtcdEndpointFailure(endpoint: endpoint, reason: "malformed reply: \(error.detail)"))
        }
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
        return .answered(EtcdWatchStream(response: response, createdRevision: revision))
      }
    } catch {
      response.close()
      return transportFailure(error, of: call)
    }
  }
}
