import CCSyncSystem

/// An object key as JSON compares keys: by its exact UTF-8 bytes (RFC 8259, section 8.3; so do
/// Python, JavaScript and jq). Swift's `String ==` and hashing also take canonically equivalent
/// strings for one (`"é"` as U+00E9 and as `e` with U+0301, `K` and the Kelvin sign U+212A),
/// which would merge two members of an object into one. The key type of every key-to-something
/// table in the JSON layer.
///
/// Hashed as the `String` hashes: strings with the same bytes are canonically equivalent, so
/// equal keys hash alike, and equivalent keys with other bytes only share a bucket.
package struct ExactKey: Hashable, Sendable {
  package var string: String

  package init(_ string: String) {
    self.string = string
  }

  package static func == (lhs: ExactKey, rhs: ExactKey) -> Bool {
    lhs.string.hasSameBytes(as: rhs.string)
  }

  package func hash(into hasher: inout Hasher) {
    hasher.combine(string)
  }
}
