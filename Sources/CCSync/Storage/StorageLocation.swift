import CCSyncSystem
import CCSyncJSON
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Where a ``CodableStorage`` keeps its file. `Sendable`.
///
/// - A path or file URL: used as given; its directory must exist.
/// - XDG base directories: ``config(app:file:)`` (`$XDG_CONFIG_HOME` or `~/.config`),
///   ``data(app:file:)``, ``state(app:file:)``, ``cache(app:file:)``, ``runtime(app:file:)``
///   (`$XDG_RUNTIME_DIR`, else the cache directory), each with an `app` subdirectory that is
///   created with mode 0700 when missing.
/// - ``key(_:in:)``: one value per key in a directory, as a key-value store: `KEY.json`, with
///   characters unsafe in a file name percent-encoded.
public struct StorageLocation: Sendable, Equatable, CustomStringConvertible {
  private enum Base: Sendable, Equatable {
    case path(String)
    case xdg(variable: String, fallback: String, app: String)
    case etcd(EtcdLocation)
  }

  private let base: Base
  private let fileName: String?

  /// A file at `path` (relative paths are taken from the current directory at first use).
  public static func path(_ path: String) -> StorageLocation {
    StorageLocation(base: .path(path), fileName: nil)
  }

  /// A file URL.
  public static func url(_ url: URL) -> StorageLocation {
    .path(url.path)
  }

  /// A key of an etcd cluster (see ``EtcdLocation``).
  public static func etcd(_ location: EtcdLocation) -> StorageLocation {
    StorageLocation(base: .etcd(location), fileName: nil)
  }

  /// The etcd key, for an etcd location.
  var etcdLocation: EtcdLocation? {
    if case .etcd(let location) = base { return location }
    return nil
  }

  /// `$XDG_CONFIG_HOME/APP/FILE`, or `~/.config/APP/FILE`.
  public static func config(app: String, file: String) -> StorageLocation {
    StorageLocation(base: .xdg(variable: "XDG_CONFIG_HOME", fallback: ".config", app: app), fileName: file)
  }

  /// `$XDG_DATA_HOME/APP/FILE`, or `~/.local/share/APP/FILE`.
  public static func data(app: String, file: String) -> StorageLocation {
    StorageLocation(base: .xdg(variable: "XDG_DATA_HOME", fallback: ".local/share", app: app), fileName: file)
  }

  /// `$XDG_STATE_HOME/APP/FILE`, or `~/.local/state/APP/FILE`.
  public static func state(app: String, file: String) -> StorageLocation {
    StorageLocation(base: .xdg(variable: "XDG_STATE_HOME", fallback: ".local/state", app: app), fileName: file)
  }

  /// `$XDG_CACHE_HOME/APP/FILE`, or `~/.cache/APP/FILE`.
  public static func cache(app: String, file: String) -> StorageLocation {
    StorageLocation(base: .xdg(variable: "XDG_CACHE_HOME", fallback: ".cache", app: app), fileName: file)
  }

  /// `$XDG_RUNTIME_DIR/APP/FILE`, or the cache directory when `XDG_RUNTIME_DIR` is unset.
  public static func runtime(app: String, file: String) -> StorageLocation {
    StorageLocation(base: .xdg(variable: "XDG_RUNTIME_DIR", fallback: ".cache", app: app), fileName: file)
  }

  /// The file for `key` in the directory of `directory` (whose own file name is ignored when
  /// it is an XDG location; pass `file: ""`), as `KEY.json` with unsafe characters encoded;
  /// for an etcd location, the key `KEY` below its key (`app` and `user` give `app/user`).
  public static func key(_ key: String, in directory: StorageLocation) -> StorageLocation {
    let name = StorageLocation.encodeKey(key) + ".json"
    switch directory.base {
    case .path(let path): return StorageLocation(base: .path(path), fileName: name)
    case .xdg: return StorageLocation(base: directory.base, fileName: name)
    case .etcd(var location):
      location.key += location.key.hasSuffix("/") ? key : "/" + key
      return .etcd(location)
    }
  }

  public var description: String {
    if case .etcd(let location) = base { return location.description }
    return (try? resolvePath(creatingDirectories: false)) ?? "\(base)"
  }

  /// The absolute file path. XDG app directories are created (mode 0700) when
  /// `creatingDirectories`.
  /// - Throws: ``StorageError`` when a directory cannot be created, or for a relative path
  ///   when the current directory was removed (`ENOENT` from `getcwd`).
  public func resolvePath(creatingDirectories: Bool = true) throws(StorageError) -> String {
    switch base {
    case .path(let path):
      let absolute = try storeCall { () throws(StoreError) in try withSystemErrors { () throws(SystemError) in try absolutePath(path) } }
      return fileName.map { FilePath.join(absolute, $0) } ?? absolute
    case .xdg(let variable, let fallback, let app):
      let root = Environment.value(variable).flatMap { $0.hasPrefix("/") ? $0 : nil }
        ?? FilePath.join(Environment.homeDirectory, fallback)
      let directory = FilePath.join(root, app)
      if creatingDirectories { try StorageLocation.makeDirectories(directory) }
      return FilePath.join(directory, fileName ?? "")
    case .etcd(let location):
      throw .store(.invalidLocation(location.description, reason: "an etcd key has no file path"))
    }
  }

  /// `mkdir -p` with mode 0700 for what it creates.
  private static func makeDirectories(_ path: String) throws(StorageError) {
    var prefix = ""
    for component in path.split(separator: "/", omittingEmptySubsequences: true) {
      prefix += "/" + component
      do {
        try FileSystem.makeDirectory(prefix, mode: 0o700)
      } catch where error.errorNumber == .fileExists {
        continue
      } catch {
        throw .store(.system(error))
      }
    }
  }

  /// Percent-encodes every byte outside `A-Z a-z 0-9 - _ .` (and a leading `.`), so any key
  /// makes one safe file name: `user/42` becomes `user%2F42`, `..` becomes `%2E.`.
  static func encodeKey(_ key: String) -> String {
    var encoded = ""
    for (offset, byte) in key.utf8.enumerated() {
      let safe = (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
        || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") || (byte == UInt8(ascii: ".") && offset > 0)
      if safe {
        encoded.unicodeScalars.append(Unicode.Scalar(byte))
      } else {
        let hex = Array("0123456789ABCDEF".unicodeScalars)
        encoded += "%" + String(hex[Int(byte >> 4)]) + String(hex[Int(byte & 0xF)])
      }
    }
    return encoded.isEmpty ? "%" : encoded
  }
}
