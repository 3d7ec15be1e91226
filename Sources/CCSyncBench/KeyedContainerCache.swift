// Keyed containers made once per key type: what a coder whose containers keep no state of
// their own can do, and the floors do.

/// The `KeyedDecodingContainer<Key>` or `KeyedEncodingContainer<Key>` made for each key
/// type, to hand out again instead of making a new one for every object.
///
/// Making one costs about 1,200 instructions, nearly all in the runtime: the standard
/// library's type-erasing box is allocated, and the generic metadata of the box, of our
/// container for that key type, and their witness table are looked up in the runtime's
/// caches. Handing out a kept one costs one metadata lookup, of `Keyed…Container<Key>`
/// itself (a generic function cannot copy one without it), and a short scan. It is only
/// right for containers that read everything from their coder, as the floors' do.
///
/// The containers refer to their coder, which holds this cache: ``removeAll()`` when the
/// decode or encode ends breaks that cycle.
struct KeyedContainerCache {
  /// A kept container, in a class so that the cache can hold containers of any type.
  private final class Holder<Container> {
    let container: Container
    init(_ container: Container) { self.container = container }
  }

  private var containerTypes: [ObjectIdentifier] = []
  private var holders: [AnyObject] = []

  /// The container of type `Container` kept, or the one `make` returns, kept.
  @inline(__always)
  mutating func container<Container>(_ make: () -> Container) -> Container {
    let containerType = ObjectIdentifier(Container.self)
    for index in containerTypes.indices where containerTypes[index] == containerType {
      // Stored below under the identity of its own type: the cast cannot be wrong.
      return unsafeDowncast(holders[index], to: Holder<Container>.self).container
    }
    let container = make()
    containerTypes.append(containerType)
    holders.append(Holder(container))
    return container
  }

  mutating func removeAll() {
    containerTypes = []
    holders = []
  }
}
