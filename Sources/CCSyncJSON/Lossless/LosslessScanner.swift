/// Finds where things lie in a text the reader has already accepted: the end of a value, the
/// members of a container, the line breaks and comments between them.
///
/// Nothing is checked again (the text parsed), so skipping a value is a scan for quotes,
/// brackets and comments. ``LosslessJSONDocument`` keeps no tree of offsets: the renderer asks
/// the scanner for the containers on the path to a change and skips everything else, so a
/// document costs its bytes and its value, and a render one pass over the text.
package struct LosslessScanner {
  /// One member of an object (key, colon, value) or one element of an array, with the comma
  /// after it.
  package struct Member {
    /// Where the member starts: its key's opening quote, or an element's first byte.
    package var start: Int
    /// Where its value starts (for an element, ``start``).
    package var valueStart: Int
    /// Just after its value.
    package var valueEnd: Int
    /// Just after the comma that follows it, when one does.
    package var commaEnd: Int?
    /// Where the trivia after it (and after its comma) ends: the next member's start, or the
    /// closing bracket.
    package var gapEnd: Int
  }

  /// The members of one array or object.
  package struct Container {
    /// The offset of the opening bracket.
    package var open: Int
    /// The offset of the closing bracket.
    package var close: Int
    package var members: [Member]

    /// The trivia before member `index`: after the opening bracket, or after the comma of the
    /// member before. (What stands between a value and its comma, as in comma-first text, is
    /// no member's gap: line breaks there do not count.)
    package func gapBefore(_ index: Int) -> Range<Int> {
      guard index > 0 else { return (open + 1)..<(members.isEmpty ? close : members[0].start) }
      return (members[index - 1].commaEnd ?? members[index - 1].valueEnd)..<members[index].start
    }

    /// The trivia after member `index`'s comma (after its value when it has none), up to the
    /// next member or the closing bracket.
    package func gapAfter(_ index: Int) -> Range<Int> {
      (members[index].commaEnd ?? members[index].valueEnd)..<members[index].gapEnd
    }
  }

  package let text: UnsafeBufferPointer<UInt8>
  package let allowsComments: Bool

  package init(text: UnsafeBufferPointer<UInt8>, allowsComments: Bool) {
    self.text = text
    self.allowsComments = allowsComments
  }

  @inline(__always)
  package static func isSpace(_ byte: UInt8) -> Bool {
    byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
  }

  /// The first offset at or after `start` that is neither whitespace nor a comment.
  package func skipTrivia(from start: Int) -> Int {
    var index = start
    while index < text.count {
      let byte = text[index]
      if LosslessScanner.isSpace(byte) {
        index += 1
      } else if allowsComments, byte == UInt8(ascii: "/"), let end = JSONReader.commentEnd(in: text, at: index) {
        index = end
      } else {
        break
      }
    }
    return index
  }

  /// The offset just after the string whose opening quote is at `open`.
  @inline(__always)
  package func stringEnd(from open: Int) -> Int {
    var index = open + 1
    let raw = UnsafeRawPointer(text.baseAddress!)
    while true {
      while index + 8 <= text.count {
        let word = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: index, as: UInt64.self))
        let found = JSONReader.specialBytes(in: word)
        if found != 0 {
          index += found.trailingZeroBitCount >> 3
          break
        }
        index += 8
      }
      // Accepted text has no control character in a string: the byte is a quote or backslash
      // (or the scan reached the last few bytes).
      while index < text.count, text[index] != UInt8(ascii: "\""), text[index] != UInt8(ascii: "\\") { index += 1 }
      guard index < text.count else { return index }
      if text[index] == UInt8(ascii: "\"") { return index + 1 }
      index += 2
    }
  }

  /// The offset just after the value that starts at `start`.
  package func valueEnd(from start: Int) -> Int {
    guard start < text.count else { return start }
    switch text[start] {
    case UInt8(ascii: "\""):
      return stringEnd(from: start)
    case UInt8(ascii: "{"), UInt8(ascii: "["):
      return containerEnd(from: start)
    default:
      // A number or a literal: letters, digits, sign, point.
      var index = start + 1
      while index < text.count {
        let byte = text[index]
        guard byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") || byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")
          || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "E")
        else { break }
        index += 1
      }
      return index
    }
  }

  /// The offset just after the array or object whose opening bracket is at `open`.
  private func containerEnd(from open: Int) -> Int {
    var depth = 0
    var index = open
    while true {
      index = nextStructuralByte(from: index)
      guard index < text.count else { return index }
      switch text[index] {
      case UInt8(ascii: "\""):
        index = stringEnd(from: index)
        continue
      case UInt8(ascii: "{"), UInt8(ascii: "["):
        depth += 1
      case UInt8(ascii: "}"), UInt8(ascii: "]"):
        depth -= 1
        if depth == 0 { return index + 1 }
      case UInt8(ascii: "/"):
        if allowsComments, let end = JSONReader.commentEnd(in: text, at: index) {
          index = end
          continue
        }
      default:
        break
      }
      index += 1
    }
  }

  /// The offset of the first byte at or after `start` that a scan over a container stops at:
  /// a quote, a bracket or brace, or (with comments) a slash; the end of the text when there
  /// is none. Eight bytes at a time: the rest of a skipped value is names, numbers and
  /// indentation. `[` and `]` differ from `{` and `}` in bit 0x20 alone, so they are found
  /// with them; as in ``JSONReader/specialBytes(in:)``, the lowest byte flagged is exact.
  @inline(__always)
  private func nextStructuralByte(from start: Int) -> Int {
    var index = start
    let ones: UInt64 = 0x0101_0101_0101_0101
    let raw = UnsafeRawPointer(text.baseAddress!)
    while index + 8 <= text.count {
      let word = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: index, as: UInt64.self))
      let folded = word | (ones &* 0x20)
      let quote = word ^ (ones &* 0x22)
      let opening = folded ^ (ones &* 0x7B)
      let closing = folded ^ (ones &* 0x7D)
      var found = ((quote &- ones) & ~quote) | ((opening &- ones) & ~opening) | ((closing &- ones) & ~closing)
      if allowsComments {
        let slash = word ^ (ones &* 0x2F)
        found |= (slash &- ones) & ~slash
      }
      found &= ones &* 0x80
      if found != 0 { return index + found.trailingZeroBitCount >> 3 }
      index += 8
    }
    while index < text.count {
      switch text[index] {
      case UInt8(ascii: "\""), UInt8(ascii: "{"), UInt8(ascii: "["), UInt8(ascii: "}"), UInt8(ascii: "]"):
        return index
      case UInt8(ascii: "/") where allowsComments:
        return index
      default:
        index += 1
      }
    }
    return index
  }

  /// The members of the array or object whose opening bracket is at `open`.
  package func container(at open: Int) -> Container {
    let isObject = text[open] == UInt8(ascii: "{")
    var members: [Member] = []
    var index = skipTrivia(from: open + 1)
    while index < text.count, text[index] != UInt8(ascii: "}"), text[index] != UInt8(ascii: "]") {
      let start = index
      var valueStart = start
      if isObject {
        valueStart = skipTrivia(from: stringEnd(from: start))  // at the colon
        valueStart = skipTrivia(from: valueStart + 1)
      }
      let end = valueEnd(from: valueStart)
      index = skipTrivia(from: end)
      var commaEnd: Int?
      if index < text.count, text[index] == UInt8(ascii: ",") {
        commaEnd = index + 1
        index = skipTrivia(from: index + 1)
      }
      members.append(Member(start: start, valueStart: valueStart, valueEnd: end, commaEnd: commaEnd, gapEnd: index))
    }
    return Container(open: open, close: index, members: members)
  }

  /// Whether the string from `open` (its quote) to `end` (after its closing quote) holds
  /// exactly the bytes of `key`, written without escapes.
  package func stringContent(from open: Int, to end: Int, equals key: String) -> Bool {
    let count = end - open - 2
    let same: Bool? = key.utf8.withContiguousStorageIfAvailable { bytes in
      bytes.count == count && (count == 0 || JSONKeyCache.equalBytes(text.baseAddress! + open + 1, bytes.baseAddress!, count))
    }
    if let same { return same }
    return key.utf8.count == count && key.utf8.elementsEqual(UnsafeBufferPointer(rebasing: text[(open + 1)..<(end - 1)]))
  }

  /// A copy of the bytes at `range`.
  package func bytes(_ range: Range<Int>) -> [UInt8] {
    Array(UnsafeBufferPointer(rebasing: text[range]))
  }

  // MARK: Trivia

  /// The offset of the first line feed in `range` outside a block comment (a line comment
  /// ends before its line feed), or `nil`.
  package func firstLineBreak(in range: Range<Int>) -> Int? {
    var index = range.lowerBound
    while index < range.upperBound {
      let byte = text[index]
      if byte == 0x0A { return index }
      if allowsComments, byte == UInt8(ascii: "/"), let end = JSONReader.commentEnd(in: text, at: index) {
        index = end  // a line comment stops before its line feed, which is then found
        continue
      }
      index += 1
    }
    return nil
  }

  /// The offset of the last line feed in `range` outside a block comment, or `nil`.
  package func lastLineBreak(in range: Range<Int>) -> Int? {
    var found: Int?
    var index = range.lowerBound
    while let next = firstLineBreak(in: index..<range.upperBound) {
      found = next
      index = next + 1
    }
    return found
  }

  /// Where the comments directly above a member begin: `range` is the trivia before it and
  /// `lineBreak` the first line feed in it (the line of the member before ends there). The
  /// result is the start of the first line of the run of comment lines right above the
  /// member; a blank line ends the run, so a comment separated by one stays.
  package func leadingCommentsStart(in range: Range<Int>, after lineBreak: Int) -> Int {
    var candidate = lineBreak + 1
    var lineHasComment = false
    var index = lineBreak + 1
    while index < range.upperBound {
      let byte = text[index]
      if byte == 0x0A {
        if !lineHasComment { candidate = index + 1 }
        lineHasComment = false
        index += 1
      } else if allowsComments, byte == UInt8(ascii: "/"), let end = JSONReader.commentEnd(in: text, at: index) {
        lineHasComment = true
        index = end
      } else {
        index += 1
      }
    }
    return candidate
  }

  /// The first offset in `range` that is not whitespace (a comment, a comma, or the end).
  package func firstNonSpace(in range: Range<Int>) -> Int {
    var index = range.lowerBound
    while index < range.upperBound, LosslessScanner.isSpace(text[index]) { index += 1 }
    return index
  }

  /// The offset just after the last comment in `range` (which holds only trivia), or `nil`.
  package func lastCommentEnd(in range: Range<Int>) -> Int? {
    lastComment(in: range)?.upperBound
  }

  /// The last comment in `range` (which holds only trivia), or `nil`.
  package func lastComment(in range: Range<Int>) -> Range<Int>? {
    guard allowsComments else { return nil }
    var found: Range<Int>?
    var index = range.lowerBound
    while index < range.upperBound {
      if text[index] == UInt8(ascii: "/"), let end = JSONReader.commentEnd(in: text, at: index) {
        found = index..<end
        index = end
      } else {
        index += 1
      }
    }
    return found
  }

  /// Where new text may go after the last comment in `range`: after the line break that ends
  /// a line comment (the comment would swallow anything on its line), just after a block
  /// comment. `nil` when `range` has no comment.
  package func endOfLastComment(in range: Range<Int>) -> (position: Int, afterLineBreak: Bool)? {
    guard let comment = lastComment(in: range) else { return nil }
    if text[comment.lowerBound + 1] == UInt8(ascii: "/"), comment.upperBound < text.count {
      return (comment.upperBound + 1, true)  // a line comment stops at its line feed
    }
    return (comment.upperBound, false)
  }

  /// Whether `range` holds a comment (it holds only trivia).
  package func hasComment(in range: Range<Int>) -> Bool {
    guard allowsComments else { return false }
    var index = range.lowerBound
    while index < range.upperBound {
      if text[index] == UInt8(ascii: "/"), JSONReader.commentEnd(in: text, at: index) != nil { return true }
      index += 1
    }
    return false
  }

  /// The spaces and tabs that start the line holding `offset`, when nothing else stands
  /// before `offset` on it; otherwise `nil`.
  package func indent(before offset: Int) -> Range<Int>? {
    var index = offset
    while index > 0, text[index - 1] == 0x20 || text[index - 1] == 0x09 { index -= 1 }
    guard index == 0 || text[index - 1] == 0x0A else { return nil }
    return index..<offset
  }

  /// The spaces and tabs that start the line holding `offset`, whatever follows them.
  package func lineIndent(of offset: Int) -> Range<Int> {
    var lineStart = offset
    while lineStart > 0, text[lineStart - 1] != 0x0A { lineStart -= 1 }
    var end = lineStart
    while end < text.count, text[end] == 0x20 || text[end] == 0x09 { end += 1 }
    return lineStart..<end
  }
}
