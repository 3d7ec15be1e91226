import Foundation
import Testing
@testable import CCSync
@testable import CCSyncEtcd
import CCSyncJSON

/// A service manager's end of `$NOTIFY_SOCKET`: a unix datagram socket bound in a test's
/// directory, read with a deadline. What `ccsync mirror` sends systemd arrives here.
///
/// `@unchecked Sendable`: the descriptor never changes; one test thread reads it.
final class NotifySocket: @unchecked Sendable {
  let path: String
  private let descriptor: Int32

  /// Binds `path` (under 108 bytes: a test directory's is).
  init(path: String) throws {
    self.path = path
    descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    withUnsafeMutableBytes(of: &address.sun_path) { buffer in
      for (index, byte) in bytes.enumerated() { buffer[index] = byte }
    }
    let bound = withUnsafePointer(to: &address) { pointer in
      pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
    guard bound == 0 else {
      let error = errno
      close(descriptor)
      throw POSIXError(POSIXErrorCode(rawValue: error) ?? .EIO)
    }
  }

  deinit {
    close(descriptor)
    unlink(path)
  }

  /// The next datagram, or `nil` when none arrives within `deadline`.
  func receive(deadline: Duration = .seconds(20)) -> String? {
    let end = ContinuousClock.now + deadline
    while true {
      let left = end - ContinuousClock.now
      guard left > .zero else { return nil }
      var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
      let milliseconds = Int32(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000) + 1
      guard poll(&poller, 1, milliseconds) > 0 else { continue }
      var buffer = [UInt8](repeating: 0, count: 4096)
      let count = recv(descriptor, &buffer, buffer.count, Int32(MSG_DONTWAIT))
      if count > 0 { return String(decoding: buffer.prefix(count), as: UTF8.self) }
    }
  }
}

/// A `ccsync mirror` child process with its own notification socket, so that a test knows
/// when its first sync is done (`READY=1`). Stopped by its process id: ``terminate()``
/// (SIGTERM, as systemd stops it) or ``kill()`` (SIGKILL, a crash); killed when released, so
/// a failing test leaves none running.
final class MirrorProcess {
  let child: ChildProcess
  let notifications: NotifySocket
  let arguments: [String]

  /// Starts `ccsync mirror ARGUMENTS` with `$NOTIFY_SOCKET` at a fresh socket in `directory`.
  init(_ arguments: [String], in directory: TemporaryDirectory, environment: [String: String] = [:]) throws {
    self.arguments = arguments
    notifications = try NotifySocket(path: directory.file("notify-\(UUID().uuidString.prefix(8))"))
    child = try CLI.start(["mirror"] + arguments, environment: CLI.environment(environment.merging(["NOTIFY_SOCKET": notifications.path]) { $1 }))
  }

  deinit { kill() }

  /// Waits for `READY=1`: the first sync of every pair has been tried.
  func waitUntilReady(deadline: Duration = .seconds(20)) -> Bool {
    notifications.receive(deadline: deadline) == "READY=1"
  }

  /// What the mirror has written to standard error so far.
  var standardError: String { child.standardError }

  /// The lines of standard error containing `text`.
  func errorLines(containing text: String) -> [String] {
    CLI.lines(standardError).filter { $0.contains(text) }
  }

  /// Sends `signal` (SIGTERM, as systemd stops a unit) and waits for the exit (SIGKILL
  /// after 10 s).
  @discardableResult
  func terminate(signal: Int32 = SIGTERM) -> ChildProcess.Outcome {
    if child.isRunning { Foundation.kill(child.process.processIdentifier, signal) }
    return child.wait(deadline: .seconds(10))
  }

  /// Kills the mirror with SIGKILL, at whatever point it is, and waits for it.
  func kill() {
    _ = child.stop()
  }
}

/// Real etcd members, a key, and "machines": directories each holding `cfg.json` (or
/// `fileName`), mirrored to the key by one `ccsync mirror` each.
final class MirrorRig {
  let cluster: EtcdCluster
  let directory: TemporaryDirectory
  let key: String
  let fileName: String
  private let client: EtcdClient

  init(members: Int = 1, key: String = "cfg", fileName: String = "cfg.json", in directory: TemporaryDirectory) throws {
    cluster = try EtcdCluster(members: members)
    self.directory = directory
    self.key = key
    self.fileName = fileName
    client = try cluster.client(deadline: .seconds(2), attemptTimeout: .seconds(1))
  }

  deinit { cluster.shutdown() }

  /// `etcd://HOST:PORT,.../KEY` for this cluster.
  func url(_ key: String? = nil) -> String {
    "etcd://" + cluster.endpoints.joined(separator: ",") + "/" + (key ?? self.key)
  }

  /// Machine `index`'s directory (created).
  func machineDirectory(_ index: Int) -> String {
    let path = directory.file("m\(index)")
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
  }

  /// Machine `index`'s file, `m<index>/cfg.json` (or `fileName`).
  func file(_ index: Int) -> String {
    machineDirectory(index) + "/" + fileName
  }

  /// Starts machine `index`'s mirror and waits for its first sync.
  func startMirror(_ index: Int, extra: [String] = [], sourceLocation: SourceLocation = #_sourceLocation) throws -> MirrorProcess {
    // The machines share one host: each reports its status under a name of its own.
    let mirror = try MirrorProcess(extra + ["--host-name", "m\(index)", file(index), url()], in: directory)
    #expect(mirror.waitUntilReady(), "no READY=1 from the mirror of m\(index): \(mirror.standardError)", sourceLocation: sourceLocation)
    return mirror
  }

  /// Writes `document` to machine 0's file, starts a mirror on each of `machines`, waits
  /// until they all agree, and runs `body` with the mirrors, which are stopped (SIGTERM)
  /// however it ends.
  func withMirrors<Result>(
    _ machines: [Int], startingFrom document: String, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: ([MirrorProcess]) throws -> Result
  ) throws -> Result {
    try CLI.write(document + "\n", to: file(0))
    let mirrors = try machines.map { try startMirror($0, sourceLocation: sourceLocation) }
    defer { for mirror in mirrors { mirror.terminate() } }
    #expect(waitUntilConverged(machines), "\(state(machines))", sourceLocation: sourceLocation)
    return try body(mirrors)
  }

  /// The key's document; `nil` when it is missing, not JSON or the cluster does not answer.
  func keyValue(_ key: String? = nil) -> JSONValue? {
    guard let found = try? client.get(Array((key ?? self.key).utf8)).keyValue else { return nil }
    return try? JSONValue(parsing: found.value)
  }

  /// The key's raw value and how many times it was written since it was created.
  func keyRecord(_ key: String? = nil) throws -> EtcdKeyValue? {
    try client.get(Array((key ?? self.key).utf8)).keyValue
  }

  /// Writes `text` to the key as etcdctl would (a foreign writer).
  func put(_ text: String, key: String? = nil, sourceLocation: SourceLocation = #_sourceLocation) throws {
    let outcome = try cluster.etcdctl(["put", key ?? self.key, text])
    #expect(outcome.status == 0, "etcdctl put: \(outcome.summary)", sourceLocation: sourceLocation)
  }

  /// Waits until the key and the files of `machines` hold one document that satisfies
  /// `condition`; returns whether they did within `deadline`.
  @discardableResult
  func waitUntilConverged(
    _ machines: [Int], deadline: Duration = .seconds(20), _ condition: (JSONValue) -> Bool = { _ in true }
  ) -> Bool {
    let end = ContinuousClock.now + deadline
    while ContinuousClock.now < end {
      if let value = keyValue(), condition(value), machines.allSatisfy({ fileValue(file($0)) == value }) { return true }
      usleep(20_000)
    }
    return false
  }

  /// What the key and each machine's file hold, for failure messages.
  func state(_ machines: [Int]) -> String {
    let key = (try? keyRecord()).flatMap { $0 }.map { String(decoding: $0.value, as: UTF8.self) } ?? "(none)"
    return "key: \(key)\n" + machines.map { "m\($0): \(contents(file($0)) ?? "(none)")" }.joined(separator: "\n")
  }
}

/// The file's document; `nil` when it is missing or not JSON.
func fileValue(_ path: String) -> JSONValue? {
  guard let bytes = CLI.bytes(path) else { return nil }
  return try? JSONValue(parsing: Array(bytes))
}

extension JSONValue {
  /// The member `key` of an object; `nil` for anything else.
  subscript(field key: String) -> JSONValue? {
    get { objectValue?[key] }
    set {
      var object = objectValue ?? JSONObject()
      object[key] = newValue
      self = .object(object)
    }
  }

  /// The integer at member `key`, if it is one.
  func integer(_ key: String) -> Int64? {
    self[field: key]?.numberValue?.int64Value
  }

  /// `JSONValue(parsing:)` of a string, for literals in tests.
  init(text: String) throws {
    try self.init(parsing: Array(text.utf8))
  }
}
