import CCSyncSystem
import CCSyncJSON

/// Who wrote a version: the host, the user, the process and its program. `Sendable`.
public struct VersionAuthor: Sendable, Equatable, CustomStringConvertible {
  public var host: String
  public var user: String
  public var pid: Int32
  public var program: String

  public init(host: String, user: String, pid: Int32, program: String) {
    self.host = host
    self.user = user
    self.pid = pid
    self.program = program
  }

  /// This process, as its writes are signed.
  public static let thisProcess = VersionAuthor(
    host: Environment.hostName, user: Environment.userName, pid: Environment.processID, program: Environment.programName)

  /// `user@host pid 123 (program)`.
  public var description: String { "\(user)@\(host) pid \(pid) (\(program))" }

  /// The author as the stores keep it.
  var json: JSONValue {
    var object = JSONObject()
    object["host"] = .string(host)
    object["user"] = .string(user)
    object["pid"] = .number(JSONNumber(Int64(pid)))
    object["program"] = .string(program)
    return .object(object)
  }

  /// An author kept as ``json``; `nil` for anything else.
  init?(json: JSONValue?) {
    guard case .object(let object)? = json, case .string(let host)? = object["host"], case .string(let user)? = object["user"],
      case .string(let program)? = object["program"], let pid = object["pid"]?.numberValue?.int64Value
    else { return nil }
    self.init(host: host, user: user, pid: Int32(truncatingIfNeeded: pid), program: program)
  }
}

/// One version of a document in its history: a file's kept versions (`.NAME.history/`), an
/// etcd key's revisions. `Sendable`.
public struct DocumentVersion: Sendable, Equatable {
  /// What names it to `diff` and `rollback`: a file's version number, a key's revision.
  public var id: String
  /// When it was written, ISO 8601 UTC; `nil` when unknown.
  public var time: String?
  /// Who wrote it; `nil` for a version written by a program that is not ccsync.
  public var author: VersionAuthor?
  /// The version it restored, when it was written by a rollback.
  public var rollbackOf: String?
  /// Whether it is the document's current version.
  public var isCurrent: Bool

  public init(id: String, time: String?, author: VersionAuthor?, rollbackOf: String?, isCurrent: Bool) {
    self.id = id
    self.time = time
    self.author = author
    self.rollbackOf = rollbackOf
    self.isCurrent = isCurrent
  }
}

/// What a write tells the store to keep with the version it writes, beyond its author.
package struct WriteNote: Sendable, Equatable {
  /// The version this write restores (a rollback).
  package var rollbackOf: String?

  package init(rollbackOf: String? = nil) {
    self.rollbackOf = rollbackOf
  }
}
