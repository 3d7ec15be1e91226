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
}

/// Reads `{"type":"DELETE"?, "kv":{...}, "prev_kv":{...}?}`; a PUT has no `type` (its enum
/// value is the zero the gateway leaves out).
extension EtcdEvent: EtcdScannedObject {
  init() {
    kind = .put
    keyValue = EtcdKeyValue()
    previous = nil
  }

  mutating func read(_ key: UnsafeBufferPointer<UInt8>, from scanner: inout EtcdReplyScanner) throws(MalformedReply) {
    switch key {
    case "type":
      switch try scanner.string("type") {
      case "", "PUT": kind = .put
      case "DELETE": kind = .delete
      case let other: throw MalformedReply(detail: "an event of unknown type \"\(other)\"")
      }
    case "kv": keyValue = try scanner.object("kv", of: EtcdKeyValue.self) ?? EtcdKeyValue()
    case "prev_kv": previous = try scanner.object("prev_kv", of: EtcdKeyValue.self)
    default: try scanner.skipValue()
    }
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

/// One message of a watch stream as the gateway sends it: the `WatchResponse` (events and
/// header) with the fields about the watch itself.
struct EtcdWatchMessage: EtcdScannedObject {
  /// The events and the revision.
  var response = EtcdWatchResponse(revision: 0, events: [])
  /// Created, canceled, why.
  var control = EtcdWatchControl(created: false, canceled: false, compactRevision: 0, cancelReason: "")

  /// Reads `{"header","watch_id","created","canceled","compact_revision","cancel_reason",
  /// "events"}` (`watch_id` and `fragment` are not used: this client opens one watch per
  /// stream and never asks for fragments).
  mutating func read(_ key: UnsafeBufferPointer<UInt8>, from scanner: inout EtcdReplyScanner) throws(MalformedReply) {
    switch key {
    case "header": response.revision = try scanner.headerRevision()
    case "events": response.events = try scanner.objects("events", of: EtcdEvent.self)
    case "created": control.created = try scanner.bool("created")
    case "canceled": control.canceled = try scanner.bool("canceled")
    case "compact_revision": control.compactRevision = try scanner.int64("compact_revision")
    case "cancel_reason": control.cancelReason = try scanner.string("cancel_reason")
    default: try scanner.skipValue()
    }
  }
}
