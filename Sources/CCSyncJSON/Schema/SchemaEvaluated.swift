import CCSyncSystem

/// The annotations `unevaluatedItems` and `unevaluatedProperties` read: which items and
/// members of the current instance some successful keyword has already evaluated. Kept only
/// where an `unevaluated*` keyword may ask, so most validation never builds one.
struct SchemaEvaluated {
  /// Every item was evaluated (`items`, `unevaluatedItems`).
  var allItems = false
  /// Items before this index were evaluated (`prefixItems`).
  var itemPrefix = 0
  /// Items `contains` matched.
  var items: Set<Int> = []
  /// Every member was evaluated (`unevaluatedProperties`).
  var allProperties = false
  /// Members `properties`, `patternProperties` or `additionalProperties` evaluated.
  var properties: Set<ExactKey> = []

  mutating func merge(_ other: SchemaEvaluated) {
    allItems = allItems || other.allItems
    itemPrefix = max(itemPrefix, other.itemPrefix)
    if !other.items.isEmpty { items.formUnion(other.items) }
    allProperties = allProperties || other.allProperties
    if !other.properties.isEmpty { properties.formUnion(other.properties) }
  }

  func containsItem(_ index: Int) -> Bool {
    allItems || index < itemPrefix || items.contains(index)
  }

  func containsProperty(_ key: String) -> Bool {
    allProperties || properties.contains(ExactKey(key))
  }
}
