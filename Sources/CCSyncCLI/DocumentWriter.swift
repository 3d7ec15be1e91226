import CCSync

/// The CLI's writes: the library's write protocol (DESIGN.md, "Writing") with the two choices a
/// command makes itself: whether a missing file is created, and whether the whole text is
/// rewritten or only a change in meaning is written.
///
/// Under the file's exclusive lock it reads the file, parses it (an invalid file is left
/// untouched and reported), runs the change on the parsed document, and replaces the file
/// atomically and durably through `SharedFile.replaceContents(with:)`, printed as the library
/// prints documents (pretty, 2-space indent, trailing newline). Values the change did not touch
/// keep their text and position.
///
/// Built on `SharedFile` rather than `SharedDocument.update` because `update` creates a missing
/// file in every case (`delete` and `edit` must not) and writes only changes in meaning (`save`
/// must rewrite a document whose key order changed).
struct DocumentWriter {
  /// When to replace the file after the change.
  enum WritePolicy {
    /// When the document differs in meaning (JSONValue `==`), or the file was missing.
    case whenChanged
    /// When the printed document differs from the file's bytes.
    case whenTextDiffers
  }

  let file: SharedFile
  let wait: LockWait

  init(path: String, wait: LockWait) {
    file = SharedFile(path: path)
    self.wait = wait
  }

  /// Runs `change` on the current document under the lock and writes the result.
  /// - Parameters:
  ///   - createIfMissing: start from `{}` when the file does not exist (its directory must);
  ///     otherwise a missing file is ``StorageError/missingFile(path:)``.
  ///   - change: gets the current document; may throw to write nothing.
  /// - Returns: what `change` returned.
  /// - Throws: ``StorageError/missingDirectory(path:)``, ``StorageError/lockUnavailable(path:)``,
  ///   ``StorageError/invalidJSON(path:_:)``, write errors, and what `change` throws.
  @discardableResult
  func modify<Result>(
    createIfMissing: Bool, policy: WritePolicy = .whenChanged,
    _ change: (inout JSONValue) throws -> Result
  ) throws -> Result {
    // Without this the first failure would be opening `FILE.lock` in a missing directory.
    let directory = FileChecks.directory(of: try file.resolvedPath())
    guard FileChecks.isDirectory(directory) else {
      if !createIfMissing, !FileChecks.exists(file.path) { throw StorageError.missingFile(path: file.path) }
      throw StorageError.missingDirectory(path: directory)
    }
    return try file.withLock(exclusive: true, wait: wait) {
      let snapshot = try file.read()
      let original: JSONValue?
      if let snapshot {
        original = try DocumentReader.parse(snapshot.bytes, path: file.path)
      } else if createIfMissing {
        original = nil
      } else {
        throw StorageError.missingFile(path: file.path)
      }
      var document = original ?? .object(JSONObject())
      let result = try change(&document)
      let bytes = DocumentWriter.documentBytes(document)
      let needsWrite: Bool
      switch policy {
      case .whenChanged: needsWrite = original == nil || document != original
      case .whenTextDiffers: needsWrite = snapshot?.bytes != bytes
      }
      if needsWrite { try file.replaceContents(with: bytes) }
      return result
    }
  }

  /// The bytes a document is written as: pretty JSON with a trailing newline, as the library
  /// writes it.
  static func documentBytes(_ value: JSONValue) -> [UInt8] {
    var bytes = value.formattedBytes(.pretty)
    if bytes.last != UInt8(ascii: "\n") { bytes.append(UInt8(ascii: "\n")) }
    return bytes
  }
}

/// Reading for the commands that only read: the file must exist and be valid JSON.
enum DocumentReader {
  /// The parsed document at `path`.
  /// - Throws: ``StorageError/missingFile(path:)`` when it does not exist, and what
  ///   `SharedDocument.read()` throws.
  static func read(_ path: String) throws(StorageError) -> JSONValue {
    guard let value = try SharedDocument(path: path).read() else { throw .missingFile(path: path) }
    return value
  }

  /// `bytes` parsed as the document of the file at `path`.
  /// - Throws: ``StorageError/invalidJSON(path:_:)`` naming `path`.
  static func parse(_ bytes: [UInt8], path: String) throws(StorageError) -> JSONValue {
    do {
      return try JSONValue(parsing: bytes)
    } catch {
      throw .invalidJSON(path: path, error)
    }
  }
}

extension LockWait {
  /// The wait the `-n`/`--nonblock` and `-w`/`--wait SECS` options ask for.
  init(_ arguments: ParsedArguments, spec: CommandSpec) throws(UsageError) {
    if arguments.has("nonblock") {
      self = .nonBlocking
    } else if let seconds = try arguments.seconds("wait", in: spec) {
      self = seconds == 0 ? .nonBlocking : .timeout(duration(seconds: seconds))
    } else {
      self = .forever
    }
  }
}
