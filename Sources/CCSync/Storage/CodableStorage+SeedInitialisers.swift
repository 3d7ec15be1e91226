#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The initialisers of the two libraries this package descends from, with their labels and
/// their meaning, so that their users' code compiles and behaves as they expect:
///
/// - NCCCodableStorage: `defaultValue:url:`, `initialValue:url:`, `wrappedValue:url:`
///   (`@CodableStorage(url: someURL) var x: T = value`), and the same with
///   `filename:directoryType:` (a ``StorageDirectory``, `.documentDirectory` by default).
///   `defaultValue:` reads the file and leaves a missing one missing; `initialValue:` and
///   `wrappedValue:` do not read it, and write their value.
/// - WLStorage: `key:defaultValue:` and `key:defaultValueClosure:`, one value per key in
///   the program's key directory (``StorageDirectory/keyLocation(_:)``:
///   `~/.local/share/PROGRAM/keys/KEY.json`); a missing file gets the default written at
///   once, and the closure is called only when the file holds no value. They write as
///   WLStorage does, throttled to once per second (``UpdateMode/keyDefault``).
///
/// Each takes the `updateMode:` and `options:` of ``init(defaultValue:location:updateMode:options:)``,
/// whose rules (merging, live reload, errors) hold for all of them.
extension CodableStorage {
  /// A storage at a file URL (its directory must exist), reading it now: NCCCodableStorage's
  /// `defaultValue:url:`. A missing, invalid or undecodable file leaves `defaultValue`.
  public convenience init(
    defaultValue: Value, url: URL, updateMode: UpdateMode = .afterIdle, options: StorageOptions = StorageOptions()
  ) {
    self.init(defaultValue: defaultValue, location: .url(url), updateMode: updateMode, options: options)
  }

  /// A storage at a file URL that does not read the file: `initialValue` is the value, and
  /// the first write replaces the file's content with it. NCCCodableStorage's
  /// `initialValue:url:`.
  public convenience init(
    initialValue: Value, url: URL, updateMode: UpdateMode = .afterIdle, options: StorageOptions = StorageOptions()
  ) {
    self.init(initialValue: initialValue, location: .url(url), updateMode: updateMode, options: options)
  }

  /// `@CodableStorage(url: someURL) var x: T = value`: the same as
  /// ``init(initialValue:url:updateMode:options:)``.
  public convenience init(
    wrappedValue: Value, url: URL, updateMode: UpdateMode = .afterIdle, options: StorageOptions = StorageOptions()
  ) {
    self.init(initialValue: wrappedValue, location: .url(url), updateMode: updateMode, options: options)
  }

  /// A storage for the file `filename` in the program's subdirectory of `directoryType`
  /// (see ``StorageDirectory`` for where each is), reading it now: NCCCodableStorage's
  /// `defaultValue:filename:directoryType:`.
  public convenience init(
    defaultValue: Value, filename: String, directoryType: StorageDirectory = .documentDirectory,
    updateMode: UpdateMode = .afterIdle, options: StorageOptions = StorageOptions()
  ) {
    self.init(
      defaultValue: defaultValue, location: directoryType.location(file: filename), updateMode: updateMode, options: options)
  }

  /// A storage for the file `filename` in the program's subdirectory of `directoryType`
  /// that does not read the file: `initialValue` is the value, and the first write replaces
  /// the file's content with it. NCCCodableStorage's `initialValue:filename:directoryType:`.
  public convenience init(
    initialValue: Value, filename: String, directoryType: StorageDirectory = .documentDirectory,
    updateMode: UpdateMode = .afterIdle, options: StorageOptions = StorageOptions()
  ) {
    self.init(
      initialValue: initialValue, location: directoryType.location(file: filename), updateMode: updateMode, options: options)
  }

  /// `@CodableStorage(filename: "name.json") var x: T = value`: the same as
  /// ``init(initialValue:filename:directoryType:updateMode:options:)``.
  public convenience init(
    wrappedValue: Value, filename: String, directoryType: StorageDirectory = .documentDirectory,
    updateMode: UpdateMode = .afterIdle, options: StorageOptions = StorageOptions()
  ) {
    self.init(initialValue: wrappedValue, filename: filename, directoryType: directoryType, updateMode: updateMode, options: options)
  }

  /// The value stored for `key` in the program's key directory
  /// (``StorageDirectory/keyLocation(_:)``), as WLStorage's `key:defaultValue:`: the file
  /// is read now; when it does not exist, `defaultValue` is written to it before the
  /// initialiser returns (unless ``StorageOptions/writesDefaultWhenMissing`` is `false`).
  /// Changes are written as WLStorage writes them, throttled to once per second
  /// (``UpdateMode/keyDefault``): the first at once, then at most one write a second.
  public convenience init(
    key: String, defaultValue: Value, updateMode: UpdateMode = .keyDefault, options: StorageOptions = StorageOptions()
  ) {
    var options = options
    options.writesDefaultWhenMissing = options.writesDefaultWhenMissing ?? true
    self.init(defaultValue: defaultValue, location: StorageDirectory.keyLocation(key), updateMode: updateMode, options: options)
  }

  /// ``init(key:defaultValue:updateMode:options:)`` with the default made by
  /// `defaultValueClosure`, called (once, before the initialiser returns) only when the
  /// file holds no value this type decodes: it is missing, invalid, or lacks a member the
  /// type needs. WLStorage's `key:defaultValueClosure:`.
  ///
  /// When the file holds a value, that value stands in for the default, also as the source
  /// of the members a later version of the file may lack.
  public convenience init(
    key: String, defaultValueClosure: () -> Value, updateMode: UpdateMode = .keyDefault,
    options: StorageOptions = StorageOptions()
  ) {
    let location = StorageDirectory.keyLocation(key)
    let stored = CodableStorage.storedValue(at: location, decoder: options.decoder)
    self.init(key: key, defaultValue: stored ?? defaultValueClosure(), updateMode: updateMode, options: options)
  }

  /// The value the file at `location` holds, decoded as it is, or `nil` when it holds none
  /// (missing, unreadable, invalid, or not a whole `Value`). Errors are the storage's to
  /// report when it reads the file in turn.
  private static func storedValue(at location: StorageLocation, decoder: JSONValueDecoder) -> Value? {
    guard let path = try? location.resolvePath(creatingDirectories: false),
          let json = try? SharedDocument(path: path).read() else { return nil }
    return try? decoder.decode(Value.self, from: json)
  }

  /// Writes the default to a file that did not exist when the storage read it (see
  /// ``StorageOptions/writesDefaultWhenMissing``). A save without pending changes creates a
  /// missing file with the value, under the lock, so a process that created the file in
  /// between keeps its version. Failures are reported, as any save's.
  func writeDefaultIfMissing() {
    guard fileState == .missing else { return }
    try? save()
  }
}
