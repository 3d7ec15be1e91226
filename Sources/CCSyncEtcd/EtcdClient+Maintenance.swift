import CCSyncJSON
import CCSyncSystem

/// One member's view of itself and the cluster (`/v3/maintenance/status`). `Sendable`.
package struct EtcdMemberStatus: Sendable, Hashable {
  /// The member that answered, `host:port`.
  package var endpoint: String
  /// Its member id.
  package var memberID: UInt64
  /// The member id of the leader it follows, 0 when it knows of none.
  package var leaderID: UInt64
  /// The store revision it has applied.
  package var revision: Int64
  /// The raft term.
  package var raftTerm: UInt64
  /// The etcd version, e.g. `3.4.23`.
  package var version: String

  /// Whether this member is the leader.
  package var isLeader: Bool { memberID != 0 && memberID == leaderID }
}

/// A member of the cluster as the member list gives it. `Sendable`.
package struct EtcdMember: Sendable, Hashable {
  /// Its member id.
  package var id: UInt64
  /// Its name (`--name`); empty for a member added but not started.
  package var name: String
  /// The URLs it serves clients on.
  package var clientURLs: [String]
  /// The URLs it talks to the other members on.
  package var peerURLs: [String]
}

extension EtcdClient {
  /// The status of one member, asked of that member only (no failover): to find the
  /// leader, or check that a member answers.
  /// - Parameter endpoint: one of ``endpoints``, or any other member's `host:port`.
  /// - Throws: ``EtcdError/unreachable(_:)`` naming that member when it does not answer.
  package func status(of endpoint: HTTPEndpoint, deadline: Duration? = nil) throws(EtcdError) -> EtcdMemberStatus {
    let call = Call(
      operation: "status", path: "/v3/maintenance/status", body: [:], isWrite: false, deadline: deadline,
      onlyEndpoint: endpoint)
    let answer = try perform(call)
    return try answer.decode { object throws(MalformedReply) in
      let header = try object.object("header") ?? JSONObject()
      return EtcdMemberStatus(
        endpoint: answer.endpoint, memberID: try header.uint64("member_id"), leaderID: try object.uint64("leader"),
        revision: try header.int64("revision"), raftTerm: try object.uint64("raftTerm"), version: try object.string("version"))
    }
  }

  /// The members of the cluster (`/v3/cluster/member/list`). A read.
  package func members(deadline: Duration? = nil) throws(EtcdError) -> [EtcdMember] {
    let call = Call(operation: "member list", path: "/v3/cluster/member/list", body: [:], isWrite: false, deadline: deadline)
    return try perform(call).decode { object throws(MalformedReply) in
      var members: [EtcdMember] = []
      for member in try object.objects("members") {
        members.append(
          EtcdMember(
            id: try member.uint64("ID"), name: try member.string("name"),
            clientURLs: member["clientURLs"]?.arrayValue?.compactMap(\.stringValue) ?? [],
            peerURLs: member["peerURLs"]?.arrayValue?.compactMap(\.stringValue) ?? []))
      }
      return members
    }
  }
}

extension JSONObject {
  /// A uint64 field (member ids use the whole range), 0 when absent.
  func uint64(_ key: String) throws(MalformedReply) -> UInt64 {
    switch self[key] {
    case nil, .null?: return 0
    case .string(let text)?:
      guard let value = UInt64(text) else { throw MalformedReply(detail: "\"\(key)\" is not an unsigned integer: \"\(text)\"") }
      return value
    case .number(let number)?:
      guard let value = number.uint64Value else { throw MalformedReply(detail: "\"\(key)\" is not a uint64: \(number)") }
      return value
    case let other?:
      throw MalformedReply(detail: "\"\(key)\" is a \(other.kindName), not an integer")
    }
  }
}
