import CCSync
import CCSyncEtcd
import CCSyncProcesses

/// `ccsync status URL [--json]`: which hosts applied, refused or missed the key's version.
enum StatusCommand: Command {
  static let json = OptionSpec(nil, "json", help: "Print JSON: {revision, hosts: [{host, revision, state, reason, since, age}], foreign}.")

  static let spec = CommandSpec(
    name: "status", overview: "Show which hosts' mirrors applied, refused or are behind an etcd key's version.",
    operands: [OperandSpec("key", kind: .etcdURL, help: "etcd://[HOST:PORT[,HOST:PORT...]]/KEY.")],
    options: [json],
    discussion: "One line per host, tab-separated: its name, the revision its file holds (or refused), its state (applied, behind, rejected) and how long it has been so, in seconds, with the reason after a refusal; then one line of summary ('3 of 4 hosts at revision 812; host-c rejected it: ...'). Hosts report from 'ccsync mirror' under KEY.ccsync-status/NAME, on a lease: a host whose mirror died disappears within its --status-ttl. A status key written by something else is ignored and named on standard error. No host reporting is exit 0 with a line saying so.")

  static func run(_ arguments: ParsedArguments) throws -> Int32 {
    let address = try arguments.address()
    guard case .etcd(let location) = address else {
      throw arguments.usageError("'\(address.name)' is a file: status is reported by mirrors under an etcd key")
    }
    let view = try FleetView.read(location)
    for key in view.foreign {
      StandardStreams.writeLine("ccsync: ignoring '\(key)': not a host's status", toStandardError: true)
    }
    if arguments.has(json) {
      var object = JSONObject()
      object["revision"] = view.revision.map { .number(JSONNumber($0)) } ?? .null
      object["hosts"] = .array(view.hosts.map { host in
        var entry = JSONObject()
        entry["host"] = .string(host.status.host)
        entry["revision"] = .number(JSONNumber(host.status.revision))
        entry["state"] = .string(host.state)
        entry["reason"] = host.status.reason.map { .string($0) } ?? .null
        entry["since"] = .string(host.status.since)
        entry["age"] = host.age.map { .number(JSONNumber(Int64($0.rounded()))) } ?? .null
        return .object(entry)
      })
      object["foreign"] = .array(view.foreign.map { .string($0) })
      StandardStreams.writeLine(JSONValue.object(object).formatted(.pretty))
      return ExitCode.success
    }
    for host in view.hosts {
      var line = [host.status.host, String(host.status.revision), host.state, host.age.map { String(Int($0.rounded())) } ?? "-"]
      if let reason = host.status.reason, host.state == "rejected" { line.append(reason) }
      StandardStreams.writeLine(line.joined(separator: "\t"))
    }
    StandardStreams.writeLine(view.summary)
    return ExitCode.success
  }
}

/// `--wait-hosts N|all` and `--timeout SECS` on the commands that write: wait until that many
/// live hosts applied the version written.
enum WaitHosts {
  static let hosts = OptionSpec(nil, "wait-hosts", value: "n|all", help: "etcd:// only: return once <n> (or all) live hosts' mirrors applied the new version; 1 when one refused it or the time ran out.")
  static let timeout = OptionSpec(nil, "timeout", value: "secs", .seconds(positive: true), help: "How long --wait-hosts waits (default 30).")
  static let all = [hosts, timeout]

  /// Waits as the arguments ask, after a write to `address` that landed.
  /// - Throws: ``CommandFailure`` (1) naming the hosts that refused or are missing.
  static func wait(_ arguments: ParsedArguments, address: DocumentAddress) throws {
    guard arguments.declares(hosts), let wanted = arguments.text(hosts) else { return }
    guard case .etcd(let location) = address else {
      throw arguments.usageError("The option '--wait-hosts' is for etcd:// keys, whose hosts' mirrors report their status")
    }
    let count: Int?
    if wanted == "all" {
      count = nil
    } else if let number = Int(wanted), number >= 1 {
      count = number
    } else {
      throw arguments.usageError("The value '\(wanted)' is invalid for '--wait-hosts <n|all>': expected a number of hosts of at least 1, or all")
    }
    let limit = arguments.seconds(timeout) ?? .seconds(30)
    let deadline = ContinuousClock.now + limit
    var view = try FleetView.read(location)
    guard let revision = view.revision else { return }
    while true {
      let current = view.hosts.filter { $0.status.revision >= revision }
      let refused = current.filter { $0.status.state == .rejected }
      if !refused.isEmpty {
        let names = refused.map { "\($0.status.host) (\($0.status.reason ?? "refused"))" }.joined(separator: ", ")
        throw CommandFailure(ExitCode.failure, "the write landed at revision \(revision), but \(names) refused it")
      }
      let applied = current.filter { $0.status.state == .applied }.count
      let needed = count ?? view.hosts.count
      if applied >= needed && (count != nil || applied == view.hosts.count) { return }
      if ContinuousClock.now >= deadline {
        let missing = view.hosts.filter { $0.status.revision < revision }.map(\.status.host)
        throw CommandFailure(
          ExitCode.failure,
          "the write landed at revision \(revision), but after \(secondsText(limit)) s only \(applied) of \(count.map(String.init) ?? "all \(view.hosts.count)") hosts applied it"
            + (missing.isEmpty ? "" : "; not yet: " + missing.joined(separator: ", ")))
      }
      ContinuousClock.sleepThread(for: .milliseconds(50))
      view = try FleetView.read(location)
    }
  }
}
