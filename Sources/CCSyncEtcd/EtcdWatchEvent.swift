import CCSyncJSON
import CCSyncSystem

/// One change a watch reports. `Sendable`.
package struct EtcdEvent: Sendable, Hashable {
  /// What happened to the key.
  package enum Kind: Sendable, Hashable {
    /// The key was written (created or changed).
    case put
    /// The key was deleted.
    case delete
  }

  /// What happened.
  package var kind: Kind
  /// The key after the change. For a delete: the key and the deletion's revision
  /// (`modRevision`), the rest empty.
  package var keyValue: EtcdKeyValue
  /// The key before the change, when the watch asked for previous values and there was one.
  package var previous: EtcdKeyValue?

  /// Reads `{"type":"DELETE"?, "kv":{...}, "prev_kv":{...}?}`; a PUT has no `type` (its
  /// enum value is the zero the gateway leaves out).
  init(json object: JSONObject) throws(MalformedReply) {
    switch try object.string("type") {
    case "", "PUT": kind = .put
    case "DELETE": kind = .delete
    case let other: throw MalformedReply(detail: "an event of unknown type \"\(other)\"")
    }
    keyValue = try EtcdKeyValue(json: try object.object("kv") ?? JSONObject())
    previous = try object.object("prev_kv").map { (object: JSONObject) throws(MalformedReply) in try EtcdKeyValue(json: object) }
  }
}

/// One message of a watch stream: events, or a progress notification. `Sendable`.
package struct EtcdWatchResponse: Sendable, Hashable {
  /// The store revision when the member sent it. For a progress notification (no events)
  /// it says every change up to this revision has been reported.
  package var revision: Int64
  /// The changes, in revision order; several may share a revision (one transaction).
  package var events: [EtcdEvent]

  /// Whether this is a progress notification rather than changes.
  package var isProgressNotification: Bool { events.isEmpty }

  /// Reads a `WatchResponse` (the `result` of a stream message).
  init(json object: JSONObject) throws(MalformedReply) {
    revision = try object.headerRevision()
    events = try object.objects("events").map { (object: JSONObject) throws(MalformedReply) in try EtcdEvent(json: object) }
  }
}

/// The parts of a watch message that are about the watch itself rather than changes.
struct EtcdWatchControl {
  /// The watch was created (the first message).
  var created: Bool
  /// The server canceled the watch; the stream carries nothing more for it.
  var canceled: Bool
  /// For a watch canceled because its start revision was compacted: the compaction revision.
  var compactRevision: Int64
  /// Why the server canceled it, e.g. `rpc error: code = Unauthenticated desc =
  /// etcdserver: invalid auth token`.
  var cancelReason: String

  /// Reads the control fields of a `WatchResponse`.
  init(json object: JSONObject) throws(MalformedReply) {
    created = try object.bool("created")
    canceled = try object.bool("canceled")
    compactRevision = try object.int64("compact_revision")
    cancelReason = try object.string("cancel_reason")
  }

  /// The error a canceled watch ends with, from `endpoint`.
  ///
  /// Measured: a start revision below the compaction gives `created` first, then a message
  /// with `canceled` and `compact_revision`; a refused token or permission gives one
  /// message with `created`, `canceled` and a `cancel_reason` carrying the gRPC error (etcd
  /// 3.5.1 says `PermissionDenied` for a token it does not know, too, and keeps the stream
  /// open).
  func cancellationError(endpoint: String) -> EtcdError {
    if compactRevision > 0 { return .compacted(endpoint: endpoint, revision: compactRevision) }
    // "rpc error: code = PermissionDenied desc = etcdserver: permission denied"
    let message = cancelReason.split(separator: "desc = ", maxSplits: 1).last.map(String.init) ?? cancelReason
    if cancelReason.contains("code = Unauthenticated") || cancelReason.contains("code = PermissionDenied") {
      let code = cancelReason.contains("code = Unauthenticated") ? 16 : 7
      return EtcdServerError(code: code, message: message).error(endpoint: endpoint)
    }
    return .watchCanceled(endpoint: endpoint, reason: cancelReason.isEmpty ? "no reason given" : cancelReason)
  }
}
