import CCSyncSystem
import CCSyncJSON

/// The observers of one storage, called in registration order, each change once, in the
/// order the changes happened.
///
/// Changes are queued; whichever thread finds nobody delivering drains the queue. A handler
/// that changes the value again (re-entrancy) only queues that change, so nothing deadlocks
/// and the order holds. `Sendable`: all state is in an ``ObserverQueue``.
///
/// This code runs unspecialized (the value's type is the library user's), and every function
/// that moves a struct whose type involves `Value` (a change, an optional of one, an array of
/// handlers) looks that type's metadata up at run time, a hash lookup each. So the list is a
/// thin typed layer: a change is boxed once, as a reference whose type does not involve
/// `Value`, and queued, handed over and delivered by the untyped ``ObserverQueue``; each
/// handler unboxes it. A change's trip from the storage's lock to its handlers looked types
/// up 20 times as structs, 5 times boxed.
final class ObserverList<Value: Sendable>: Sendable {
  typealias Handler = @Sendable (StorageChange<Value>) -> Void

  private let queue = ObserverQueue()

  /// Adds `handler`; the returned observation removes it when cancelled or released.
  func add(_ handler: @escaping Handler) -> StorageObservation {
    queue.add(Self.unboxing(handler))
  }

  /// Adds `handler` for the list's whole life, with no observation to keep: the storage's
  /// own bridge to the Observation module, which must hear every change once, as the
  /// observers do, whoever observes. Called after every other handler, those added later
  /// included, so that it adds nothing to the time they wait for a change.
  func addForLifetime(_ handler: @escaping Handler) {
    queue.addForLifetime(Self.unboxing(handler))
  }

  /// Takes the change to `value`, made by `origin`, for every observer without calling anyone
  /// (see ``ObserverQueue/enqueue(_:)``); `nil` when there is nobody to call now.
  func enqueue(value: Value, origin: ChangeOrigin) -> ObserverDelivery? {
    queue.enqueue(BoxedChange(StorageChange(value: value, origin: origin)))
  }

  /// Calls the handlers with the delivery's change, then with every change queued meanwhile
  /// (see ``ObserverQueue/deliver(_:)``).
  func deliver(_ delivery: ObserverDelivery) {
    queue.deliver(delivery)
  }

  /// `handler` called with the change inside the box it is given (only boxes this list made
  /// reach it).
  private static func unboxing(_ handler: @escaping Handler) -> ObserverQueue.Handler {
    { box in handler(unsafeDowncast(box, to: BoxedChange<Value>.self).change) }
  }
}

/// A change as ``ObserverQueue`` holds it: a reference whose type does not involve the value's.
class AnyBoxedChange: @unchecked Sendable {}

/// One change to a value of type `Value`, boxed. `@unchecked Sendable`: immutable, and its
/// change is `Sendable`.
final class BoxedChange<Value: Sendable>: AnyBoxedChange, @unchecked Sendable {
  let change: StorageChange<Value>

  init(_ change: StorageChange<Value>) {
    self.change = change
  }
}

/// A change ``ObserverQueue/enqueue(_:)`` left to its caller to deliver, and who to call with
/// it. `Sendable`: immutable.
final class ObserverDelivery: Sendable {
  let change: AnyBoxedChange
  let handlers: [ObserverQueue.Handler]

  init(change: AnyBoxedChange, handlers: [ObserverQueue.Handler]) {
    self.change = change
    self.handlers = handlers
  }
}

/// The handlers of an ``ObserverList`` and its changes not yet delivered, with no type of
/// value in sight. `Sendable`: all state is behind a `Protected`.
final class ObserverQueue: Sendable {
  typealias Handler = @Sendable (AnyBoxedChange) -> Void

  private struct State {
    var handlers: [Handler] = []
    var handlerIDs: [UInt64] = []
    /// How many handlers at the end are there for the list's whole life (``addForLifetime(_:)``).
    var lifetimeHandlers = 0
    var nextID: UInt64 = 0
    /// Changes not yet delivered start at `queueHead`; the array is emptied when all are.
    var queue: [AnyBoxedChange] = []
    var queueHead = 0
    var delivering = false
  }

  private let state = Protected(State())

  /// Adds `handler`; the returned observation removes it when cancelled or released.
  func add(_ handler: @escaping Handler) -> StorageObservation {
    let id = insert(handler)
    return StorageObservation { [weak self] in
      self?.state.withLock { state in
        guard let position = state.handlerIDs.firstIndex(of: id) else { return }
        state.handlers.remove(at: position)
        state.handlerIDs.remove(at: position)
      }
    }
  }

  /// Adds `handler` for the queue's whole life, after every other handler (see
  /// ``ObserverList/addForLifetime(_:)``).
  func addForLifetime(_ handler: @escaping Handler) {
    _ = insert(handler, forLifetime: true)
  }

  /// Inserts `handler` before the lifetime handlers, or after them all `forLifetime`.
  private func insert(_ handler: @escaping Handler, forLifetime: Bool = false) -> UInt64 {
    state.withLock { state in
      state.nextID += 1
      let position = forLifetime ? state.handlers.count : state.handlers.count - state.lifetimeHandlers
      state.handlers.insert(handler, at: position)
      state.handlerIDs.insert(state.nextID, at: position)
      if forLifetime { state.lifetimeHandlers += 1 }
      return state.nextID
    }
  }

  /// Takes `change` for every observer without calling anyone, so a caller can do it while
  /// holding the lock that ordered the change. Returns what the caller must ``deliver(_:)``
  /// (after releasing that lock): `nil` when there is no observer, or when another thread is
  /// delivering, which then takes this change too, after the ones before it.
  ///
  /// When nobody is delivering, the change is not queued: the caller delivers it first and
  /// then whatever others queued meanwhile, so the usual case (one change at a time) costs one
  /// lock round trip here and one after the calls, with no queue in between.
  func enqueue(_ change: AnyBoxedChange) -> ObserverDelivery? {
    state.withLock { state in
      guard !state.handlers.isEmpty else { return nil }
      if state.delivering {
        state.queue.append(change)
        return nil
      }
      state.delivering = true
      return ObserverDelivery(change: change, handlers: state.handlers)
    }
  }

  /// Calls the handlers with the delivery's change, then with every change queued meanwhile,
  /// in order, until the queue is empty. Only the thread that ``enqueue(_:)`` gave the
  /// delivery to calls this.
  func deliver(_ delivery: ObserverDelivery) {
    for handler in delivery.handlers { handler(delivery.change) }
    var handlers = delivery.handlers
    while let next = nextDelivery(handlers: &handlers) {
      for handler in handlers { handler(next) }
    }
  }

  /// The next change to deliver, and in `handlers` who to call with it; `nil` when the queue
  /// is empty, and then this thread is no longer the one delivering.
  private func nextDelivery(handlers: inout [Handler]) -> AnyBoxedChange? {
    state.withLock { state in
      guard state.queueHead < state.queue.count else {
        if !state.queue.isEmpty { state.queue.removeAll(keepingCapacity: true) }
        state.queueHead = 0
        state.delivering = false
        return nil
      }
      state.queueHead += 1
      handlers = state.handlers
      return state.queue[state.queueHead - 1]
    }
  }
}
