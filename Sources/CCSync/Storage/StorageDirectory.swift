/// The directory of a storage made with `filename:` (the `directoryType:` argument), named as
/// NCCCodableStorage's users name it on Apple platforms, or by its XDG name.
///
/// Every case is the program's own subdirectory (named ``programName``) of an XDG base
/// directory, created with mode 0700 when missing: on Linux the base directories are shared
/// by every program of a user, where Apple's are the app's own (iOS, a sandboxed Mac app).
///
/// | Case | On Apple platforms | Here |
/// |------|--------------------|------|
/// | ``documentDirectory`` (the default) | `Documents` | `$XDG_DATA_HOME/PROGRAM`, else `~/.local/share/PROGRAM` |
/// | ``applicationSupportDirectory`` | `Library/Application Support` | the same |
/// | ``cachesDirectory`` | `Library/Caches` | `$XDG_CACHE_HOME/PROGRAM`, else `~/.cache/PROGRAM` |
/// | ``config`` | (`Library/Preferences`) | `$XDG_CONFIG_HOME/PROGRAM`, else `~/.config/PROGRAM` |
/// | ``data`` | | `$XDG_DATA_HOME/PROGRAM`, as ``documentDirectory`` |
/// | ``state`` | | `$XDG_STATE_HOME/PROGRAM`, else `~/.local/state/PROGRAM` |
/// | ``cache`` | | as ``cachesDirectory`` |
/// | ``runtime`` | | `$XDG_RUNTIME_DIR/PROGRAM`, else as ``cachesDirectory`` |
///
/// Documents and application support both become the data directory: XDG has no directory
/// for a person's documents that is a program's own, and the data directory is where a
/// program keeps the files its user would lose if it were removed. The directories that hold
/// a person's files rather than a program's (`desktopDirectory`, `downloadsDirectory`, ...)
/// have no per-program XDG counterpart and are not offered: give such a file with `url:`.
/// `Sendable`.
public enum StorageDirectory: Sendable, Equatable, CaseIterable {
  /// Apple's documents directory: here the XDG data directory.
  case documentDirectory
  /// Apple's application support directory: here the XDG data directory.
  case applicationSupportDirectory
  /// Apple's caches directory: here the XDG cache directory.
  case cachesDirectory
  /// `$XDG_CONFIG_HOME/PROGRAM`: settings a person may edit.
  case config
  /// `$XDG_DATA_HOME/PROGRAM`: data the program keeps.
  case data
  /// `$XDG_STATE_HOME/PROGRAM`: state that survives a restart but is not worth a backup
  /// (history, window positions).
  case state
  /// `$XDG_CACHE_HOME/PROGRAM`: what can be computed again.
  case cache
  /// `$XDG_RUNTIME_DIR/PROGRAM` (the cache directory when `XDG_RUNTIME_DIR` is unset):
  /// what lives no longer than the user's login session.
  case runtime

  /// The name of the running program: the last component of `/proc/self/exe` (the
  /// executable, whatever name it was started by), else of its first argument. Names the
  /// program's subdirectory of every case, and of the `key:` initialisers' directory.
  public static let programName: String = {
    var name = (try? symbolicLinkTarget(atPath: "/proc/self/exe")).map(FilePath.name(of:)) ?? ""
    // An executable replaced or removed while it runs reads as "NAME (deleted)".
    if name.hasSuffix(" (deleted)") { name.removeLast(" (deleted)".count) }
    if name.isEmpty, let first = CommandLine.arguments.first { name = FilePath.name(of: first) }
    return name.isEmpty ? "ccsync" : name
  }()

  /// The file `name` in this directory.
  public func location(file name: String) -> StorageLocation {
    location(app: StorageDirectory.programName, file: name)
  }

  /// The file `name` in this XDG base directory's subdirectory `app`.
  func location(app: String, file name: String) -> StorageLocation {
    switch self {
    case .documentDirectory, .applicationSupportDirectory, .data: .data(app: app, file: name)
    case .cachesDirectory, .cache: .cache(app: app, file: name)
    case .config: .config(app: app, file: name)
    case .state: .state(app: app, file: name)
    case .runtime: .runtime(app: app, file: name)
    }
  }

  /// The directory of the `key:` initialisers (WLStorage's): one file per key, `KEY.json`,
  /// in `$XDG_DATA_HOME/PROGRAM/keys/`, else `~/.local/share/PROGRAM/keys/`. Apart from the
  /// `filename:` files of ``data``, so that a key never names one of them.
  public static func keyLocation(_ key: String) -> StorageLocation {
    .key(key, in: StorageDirectory.data.location(app: programName + "/keys", file: ""))
  }

  /// A person's folder, not a program's: XDG has no per-program desktop directory.
  @available(*, unavailable, message: "a person's folder, not a program's: XDG has none per program; give the file with url:")
  public static var desktopDirectory: StorageDirectory { fatalError("unavailable") }

  /// A person's folder, not a program's: XDG has no per-program downloads directory.
  @available(*, unavailable, message: "a person's folder, not a program's: XDG has none per program; give the file with url:")
  public static var downloadsDirectory: StorageDirectory { fatalError("unavailable") }
}
