// Keyed containers made once per key type: what a coder whose containers keep no state of
// their own can do, and the floors do.

/// The `KeyedDecodingContainer` or `KeyedEncodingContainer` made for each key type, to hand
/// out again instead of making a new one for every object.
///
/// Making one costs about 1,200 instructions, nearly all in the runtime: the standard
/// library's type-erasing box is allocated, and the generic metadata of the box, of our
/// container for that key type, and their witness table are looked up in the runtime's
/// caches. Handing out a kept one costs the metadata of `Keyed…Container<Key>` (a generic
/// function cannot copy it without) and a short scan. It is only right for containers that
/// read everything from their coder, as the floors' do.
///
/// The containers refer to their coder, which holds this cache: ``removeAll()`` when the
/// decode or encode ends breaks that cycle.
struct KeyedContainerCache {
  private var keyTypes: [ObjectIdentifier] = []
  /// The containers, as the one reference each of them is (see ``container(for:make:)``).
  private var containers: [AnyObject] = []

  /// The container kept for `Key`, or the one `make` returns, kept.
  ///
  /// `Keyed…Container` is a struct whose one stored property is a reference to its box;
  /// `unsafeBitCast` (which checks that the sizes agree) moves it in and out of that
  /// reference without a dynamic cast.
  @inline(__always)
  mutating func container<Key: CodingKey, Container>(for key: Key.Type, make: () -> Container) -> Container {
    let keyType = ObjectIdentifier(Key.self)
    for index in keyTypes.indices where keyTypes[index] == keyType {
      return unsafeBitCast(containers[index], to: Container.self)
    }
    let container = make()
    keyTypes.append(keyType)
    containers.append(unsafeBitCast(container, to: AnyObject.self))
    return container
  }

  mutating func removeAll() {
    keyTypes = []
    containers = []
  }
}
