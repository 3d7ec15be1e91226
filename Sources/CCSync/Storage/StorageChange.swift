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
  /// Nothing is known of the document yet: the first read could not ask its store (no etcd
  /// member answered, or the cluster failed the call), so the value in memory is the default.
  /// The message says what failed. The first look or write that reaches the store replaces
  /// it; a later read that cannot ask leaves the state as the last look found it (an
  /// unreachable cluster says nothing of the document).
  case unknown(String)

  /// Whether nothing is known of the document yet.
  var isUnknown: Bool {
    if case .unknown = self { return true }
    return false
  }
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
