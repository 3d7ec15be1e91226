import CCSyncSystem
import CCSyncJSON

/// Where a change to a stored value came from. `Sendable`.
public enum ChangeOrigin: Sendable, Equatable {
  /// This process set the value.
  case local
  /// Another process (or a person with an editor) wrote the file.
  case external
}

/// One change to a stored value, as observers hear it. `Sendable`.
public struct StorageChange<Value: Sendable>: Sendable {
  /// The value after the change.
  public var value: Value
  /// Who made the change.
  public var origin: ChangeOrigin
}

/// What a ``CodableStorage`` currently knows of its file. `Sendable`.
public enum FileState: Sendable, Equatable {
  /// The file holds a value that decodes (or has just been written).
  case valid
  /// The file does not exist; the value in memory is kept.
  case missing
  /// The file is not valid JSON, does not decode, or was refused by the document's gate (its
  /// schema or check): the value in memory, the last good one, is kept. The message names the
  /// file and the problem (line and column, the coding path, or the JSON pointer and keyword).
  case invalid(String)
}

/// Keeps an observation alive; dropping it (or calling ``cancel()``) stops the callbacks.
/// `Sendable`.
public final class StorageObservation: Sendable {
  private let onCancel: @Sendable () -> Void

  init(onCancel: @escaping @Sendable () -> Void) {
    self.onCancel = onCancel
  }

  /// Stops the callbacks. Idempotent.
  public func cancel() { onCancel() }

  deinit { onCancel() }
}
