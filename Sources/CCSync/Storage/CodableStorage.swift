import CCSyncSystem
import CCSyncJSON
import Observation

/// A `Codable` value kept in a JSON file that several processes share.
///
/// ```swift
/// @CodableStorage(defaultValue: Settings(), location: .config(app: "demo", file: "settings.json"))
/// var settings: Settings
/// settings.theme = "dark"                      // in memory now, on disk after 2 s idle
/// try $settings.update { $0.launchCount += 1 }  // exact cross-process read-modify-write
/// ```
///
/// - Reading: `defaultValue:` reads the file when it exists (keys missing from the file take the
///   default's values); a missing, invalid or undecodable file leaves the default in memory and
///   is reported. `initialValue:` (or `var x: T = value`) does not read the file; the first
///   write replaces its content with the value.
/// - Writing: the ``UpdateMode`` says when. A write applies only the fields this process changed
///   (a field-level change set) to the file's current JSON under the file's lock, so fields
///   other processes changed survive, and keys the `Value` type does not know are never dropped.
///   A file that is not valid JSON is first kept as `NAME.corrupt-TIMESTAMP`.
/// - Failures never crash: an automatic write that fails keeps the change pending, is reported
///   to ``onError(_:)`` handlers and the logger, and is retried with backoff.
/// - Pending changes are written by ``flush()``, on deinit, at normal exit and on SIGTERM,
///   SIGINT and SIGHUP (unless ``StorageOptions/flushesAtExit`` is off).
/// - `Observable` (the Observation module): reading ``wrappedValue`` inside
///   `withObservationTracking` registers it, and each change observers hear calls `onChange`.
///
/// Thread-safe and `Sendable`: all state is behind a `Protected`; saves and updates run one
/// after another (``inSequence(_:)``), and file work is serialised by the file lock.
@propertyWrapper
public final class CodableStorage<Value: Codable & Sendable>: Sendable {
  /// Where the file is.
  public let location: StorageLocation
  /// When local changes are written.
  public let updateMode: UpdateMode
  /// Durability, watching, exit flushing, coders and logger.
  public let options: StorageOptions
  /// The document underneath (the JSON layer of the same file).
  public let document: SharedDocument

  /// The coders and the default value encoded (the initial value's for `initialValue:`), the
  /// base for keys a file lacks. Fixed at initialisation.
  let coding: ValueCoding<Value>
  let state: Protected<StorageState<Value>>
  let observers = ObserverList<Value>()
  let errorHandlers = Protected<[@Sendable (StorageError) -> Void]>([])
  let scheduler: Protected<SaveScheduler?> = Protected(nil)
  /// What follows the document for this storage, started when it watches (see ``DocumentFollower``).
  let follower: Protected<DocumentFollower?> = Protected(nil)
  /// Orders this storage's saves and updates (see ``CodableStorage/inSequence(_:)``).
  let writeSequence = RecursiveLock()
  /// Lets this storage's `async` saves and updates onto the blocking pool one at a time, so
  /// that many of them take one of its threads (CodableStorage+Async.swift).
  let asyncWrites = AsyncSerialGate()
  /// Tells the Observation module of reads and changes of ``wrappedValue``
  /// (CodableStorage+Observation.swift).
  let observationRegistrar = ObservationRegistrar()
  /// `\.wrappedValue`, made once: a key path into a generic class is built at run time
  /// each time its literal is evaluated, which every reload's Observation notice would pay.
  let wrappedValueKeyPath: KeyPath<CodableStorage, Value> & Sendable = \.wrappedValue

  /// Creates a storage that reads the file now (when it exists) and starts from
  /// `defaultValue` otherwise.
  /// - Parameters:
  ///   - defaultValue: the value when the file is missing, invalid or does not decode, and the
  ///     source of the members the type asks for and the file lacks (never of a dictionary's
  ///     entries: a dictionary gets exactly the file's keys).
  ///   - location: where the file is.
  ///   - updateMode: when local changes are written (default: after 2 s idle).
  ///   - options: durability, live reload, exit flushing, coders, logger.
  public convenience init(
    defaultValue: Value, location: StorageLocation, updateMode: UpdateMode = .afterIdle,
    options: StorageOptions = StorageOptions()
  ) {
    self.init(value: defaultValue, readsFile: true, location: location, updateMode: updateMode, options: options)
  }

  /// Creates a storage that does not read the file: `initialValue` is the value, and the first
  /// write (scheduled at once per the update mode) replaces the file's content with it.
  public convenience init(
    initialValue: Value, location: StorageLocation, updateMode: UpdateMode = .afterIdle,
    options: StorageOptions = StorageOptions()
  ) {
    self.init(value: initialValue, readsFile: false, location: location, updateMode: updateMode, options: options)
  }

  /// The public initialisers' document: the file or key `location` names, made per `options`.
  private convenience init(value: Value, readsFile: Bool, location: StorageLocation, updateMode: UpdateMode, options: StorageOptions) {
    let (document, pathError) = CodableStorage.makeDocument(location, options: options)
    self.init(
      value: value, readsFile: readsFile, document: document, location: location, locationError: pathError,
      updateMode: updateMode, options: options)
  }

  /// The shared initialiser, over `document` whatever its store (the tests give one kept in
  /// memory): with `readsFile` the value is a default the document overrides; without, it is
  /// synced with nothing, so the change set from `.null` replaces the whole document at the
  /// first write, which is scheduled at once. The document's gate, durability and syntax are
  /// its own (`options`' are what the public initialisers make it with); `locationError`, a
  /// location that could not be resolved, is reported once the storage is running.
  init(
    value: Value, readsFile: Bool, document: SharedDocument, location: StorageLocation, locationError: StorageError? = nil,
    updateMode: UpdateMode, options: StorageOptions
  ) {
    self.location = location
    self.updateMode = updateMode
    self.options = options
    self.document = document
    var encoded = JSONValue.null
    var encodingError: StorageError?
    do {
      encoded = try options.encoder.encode(value)
    } catch {
      // Reported, not hidden: a value that cannot be encoded can never be written.
      encodingError = .encodingFailed(path: document.name, message: "\(error)")
    }
    coding = ValueCoding(encoder: options.encoder, decoder: options.decoder, encodedDefault: encoded, path: document.name)
    state = Protected(StorageState(value: value, encodedValue: encoded, synced: readsFile ? encoded : .null))
    connectObservation()
    start()
    if let locationError { report(locationError) }
    if let encodingError { report(encodingError) }
    if readsFile { loadAtStart() } else { localValueChanged() }
    if readsFile && options.writesDefaultWhenMissing == true { writeDefaultIfMissing() }
  }

  /// `@CodableStorage(location: ...) var x: T = value`: the same as `init(initialValue:...)`.
  public convenience init(
    wrappedValue: Value, location: StorageLocation, updateMode: UpdateMode = .afterIdle,
    options: StorageOptions = StorageOptions()
  ) {
    self.init(initialValue: wrappedValue, location: location, updateMode: updateMode, options: options)
  }

  /// A storage at a file path (its directory must exist), reading it now.
  public convenience init(
    defaultValue: Value, path: String, updateMode: UpdateMode = .afterIdle,
    options: StorageOptions = StorageOptions()
  ) {
    self.init(defaultValue: defaultValue, location: .path(path), updateMode: updateMode, options: options)
  }

  deinit {
    // Counted as flushing from the start, so that an exit meanwhile waits for it.
    ExitFlusher.flushingInDeinit {
      follower.withLock { $0?.stop() }
      if hasPendingChanges { flushForExit() }
    }
  }

  /// The value in memory: local changes show at once, other processes' writes as they are
  /// reloaded. Setting it schedules a write per the update mode.
  ///
  /// An edit in place (`storage.wrappedValue.theme = "dark"`, `settings.theme = "dark"` through
  /// the wrapper) reads the value, changes it and writes it back; when the value changed in
  /// between (another process's write reloaded, a save's result taken, another thread's
  /// edit), only the fields the edit changed are applied to the current value, so the
  /// others' changes are not reverted. Assigning a whole value replaces every field.
  public var wrappedValue: Value {
    get {
      observationAccess()
      return state.withLock { $0.value }
    }
    set { setValue(newValue) }
    _modify {
      observationAccess()
      let (base, baseEncoded) = state.withLock { state in (state.value, try? encodings(of: &state).value) }
      var value = base
      yield &value
      setValue(value, editedFrom: baseEncoded)
    }
  }

  /// The storage itself, for `$settings.update { }`, `$settings.save()` and observation.
  public var projectedValue: CodableStorage<Value> { self }

  /// Whether local changes are waiting to be written.
  public var hasPendingChanges: Bool {
    state.withLock { $0.hasPendingChanges }
  }

  /// What the storage currently knows of its file.
  public var fileState: FileState {
    state.withLock { $0.fileState }
  }

  /// The most recent error (a failed read, decode or write), cleared by the next success.
  public var lastError: StorageError? {
    state.withLock { $0.lastError }
  }

  /// The file's path (symlinks not resolved), or the etcd key's URL.
  public var path: String { document.name }

  private static func makeDocument(_ location: StorageLocation, options: StorageOptions) -> (SharedDocument, StorageError?) {
    let gate = options.gate
    if let etcd = location.etcdLocation { return (SharedDocument(etcd: etcd, logger: options.logger, gate: gate, syntax: options.syntax), nil) }
    do {
      return (SharedDocument(path: try location.resolvePath(), durable: options.durable, logger: options.logger, gate: gate, syntax: options.syntax), nil)
    } catch {
      let fallback = (try? location.resolvePath(creatingDirectories: false)) ?? location.description
      return (SharedDocument(path: fallback, durable: options.durable, logger: options.logger, gate: gate, syntax: options.syntax), error)
    }
  }

  /// Scheduler, exit hooks and watcher: everything that needs `self`.
  private func start() {
    if updateMode != .manual {  // .immediate uses it for retries
      let scheduler = SaveScheduler(mode: updateMode) { [weak self] in self?.automaticSave() ?? true }
      self.scheduler.withLock { $0 = scheduler }
    }
    if options.flushesAtExit { ExitFlusher.register(self, logger: options.logger) }
    startFollowing()
  }
}

extension CodableStorage: ExitFlushable {
  func flushForExit() {
    _ = flushForExit(wait: .forever)
  }
}
