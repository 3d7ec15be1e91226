// The recording a replay decode plays back: every value a decode handed out, in call order.
import CCSync
import CCSyncProcesses

/// Every answer a decode gave its `init(from:)` calls, one column per kind of answer, each
/// in call order. ``TapeRecorder`` fills it from a `JSONValue` tree; ``ReplayDecoder`` plays
/// it back to the same calls without looking anything up.
///
/// Columns, not one array of an enum, so that playing a value back is one array read with
/// no switch on its kind.
struct DecodingTape {
  /// What a generic `decode(_:)` found: an array (decoded element by element) or any other
  /// value whose type's `init(from:)` runs.
  enum Kind: UInt8 {
    case nested
    case array
  }

  /// `String` values, and the keys `allKeys` listed.
  var strings: [String] = []
  /// Integers of every width, as their bit pattern (the recorder checks that it round-trips).
  var integers: [UInt64] = []
  var doubles: [Double] = []
  var floats: [Float] = []
  var bools: [Bool] = []
  /// Answers to `decodeNil`, `contains`, and whether a `decodeIfPresent` found a value.
  var flags: [Bool] = []
  /// Element counts of arrays, and key counts of `allKeys`.
  var counts: [Int] = []
  /// One per generic `decode` of a type that is not decoded whole (see ``ReplayDecoder``).
  var kinds: [Kind] = []
  var stringArrays: [[String]] = []
  var stringDictionaries: [[String: String]] = []

  /// How many values the tape holds, all columns together.
  var valueCount: Int {
    strings.count + integers.count + doubles.count + floats.count + bools.count + flags.count
      + counts.count + kinds.count + stringArrays.count + stringDictionaries.count
  }
}

/// Arrays are decoded element by element, without the standard library's unspecialized
/// `Array.init(from:)` and its unkeyed container (as `JSONValueDecoder` does).
protocol TapeArray {
  /// Records `elements` as `[Element]`.
  static func record(_ elements: [JSONValue], recorder: TapeRecorder) throws -> Self
  /// Plays back `count` elements as a `Result`, which is `Self`.
  static func replay<Result>(count: Int, decoder: ReplayDecoder, as result: Result.Type) throws -> Result
}

extension Array: TapeArray where Element: Decodable {
  static func record(_ elements: [JSONValue], recorder: TapeRecorder) throws -> [Element] {
    try elements.map { try recorder.record($0, as: Element.self) }
  }

  static func replay<Result>(count: Int, decoder: ReplayDecoder, as result: Result.Type) throws -> Result {
    var elements: [Element] = []
    elements.reserveCapacity(count)
    for _ in 0..<count { elements.append(try decoder.value(Element.self)) }
    // `Result` is `Self` (the caller checked), so this is not a conversion.
    return unsafeBitCast(elements, to: Result.self)
  }
}
