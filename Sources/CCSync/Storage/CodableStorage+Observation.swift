import Observation

/// The Observation module: a `CodableStorage` is `Observable`, so that SwiftUI-style code on
/// Linux (`withObservationTracking`, `Observations`, an `@Observable` model that reads a
/// storage) sees its changes, local and from other processes.
///
/// ```swift
/// @Observable final class Model {
///   @ObservationIgnored @CodableStorage(defaultValue: Settings(), path: "/srv/app/settings.json")
///   var settings: Settings
///   var theme: String { settings.theme }
/// }
/// withObservationTracking { _ = model.theme } onChange: { print("changed") }
/// ```
///
/// Reading ``wrappedValue`` (through the wrapper, or `storage.wrappedValue`) inside
/// `withObservationTracking` registers it. Every change observers hear (``observe(_:)``)
/// is a mutation of ``wrappedValue`` for the Observation module too, once, whoever made it:
/// a local set, another process's write reloaded, a reload merged with pending local edits,
/// a save or `update { }` whose result moved the value. A set to an equal value, a save that
/// found nothing new, are no change.
///
/// Unlike a stored property of an `@Observable` class, whose `onChange` runs before the new
/// value is in place (`willSet`), a storage tells the Observation module once the value has
/// changed: `onChange` runs on the thread that made or noticed the change (the storage's
/// reload queue for another process's write), after the ``observe(_:)`` handlers, holding none of
/// the storage's locks, and may read the new value. (The `@Observable` macro cannot take the wrapper itself: mark it
/// `@ObservationIgnored`; the storage is observable on its own.)
extension CodableStorage: Observable {}

extension CodableStorage {
  /// Registers a read of ``wrappedValue`` with an enclosing `withObservationTracking`.
  func observationAccess() {
    observationRegistrar.access(self, keyPath: wrappedValueKeyPath)
  }

  /// Makes every change the observers hear a mutation of ``wrappedValue`` for the
  /// Observation module. Through the observer list, not where each change is made: the
  /// list already delivers each change once, in order, out of every lock (see
  /// ``ObserverList/enqueue(value:origin:)``), which the registrar needs since `onChange`
  /// handlers may read the value. The weak reference keeps the list from owning the storage;
  /// during deinit (its last flush) nobody can be tracking it any more.
  func connectObservation() {
    observers.addForLifetime { [weak self] _ in
      guard let self else { return }
      self.observationRegistrar.withMutation(of: self, keyPath: self.wrappedValueKeyPath) {}
    }
  }
}
