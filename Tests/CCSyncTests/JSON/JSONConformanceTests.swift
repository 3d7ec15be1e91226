import Foundation
import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

/// The JSONTestSuite corpus (github.com/nst/JSONTestSuite), read from `$CCSYNC_JSONTESTSUITE`
/// when set (`.ci/run` sets it for a clone made away from the corpus), else from
/// `../shared/JSONTestSuite` beside the package root. It is not part of the package: on a
/// clone without it these tests are skipped, and CI sets `CCSYNC_REQUIRE_CONFORMANCE=1` so
/// that its absence fails the run instead.
enum ConformanceCorpus {
  static let directory = ProcessInfo.processInfo.environment["CCSYNC_JSONTESTSUITE"].map { URL(fileURLWithPath: $0) }
    ?? packageRoot.appendingPathComponent("../shared/JSONTestSuite").standardized
  static let parsingDirectory = directory.appendingPathComponent("test_parsing")
  static let transformDirectory = directory.appendingPathComponent("test_transform")

  static var isPresent: Bool {
    var isDirectory: ObjCBool = false
    return FileManager.default.fileExists(atPath: parsingDirectory.path, isDirectory: &isDirectory)
      && isDirectory.boolValue
  }

  static var isRequired: Bool {
    ProcessInfo.processInfo.environment["CCSYNC_REQUIRE_CONFORMANCE"] == "1"
  }

  static let absentMessage: Comment =
    "JSONTestSuite not found at ../shared/JSONTestSuite (or $CCSYNC_JSONTESTSUITE); conformance tests skipped (CI sets CCSYNC_REQUIRE_CONFORMANCE=1 to require it)"

  /// The names of the parsing cases starting with `prefix`, sorted; empty when absent.
  static func parsingFiles(_ prefix: String) -> [String] {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: parsingDirectory.path)) ?? []
    return names.filter { $0.hasPrefix(prefix) && $0.hasSuffix(".json") }.sorted()
  }

  static func parsingBytes(_ name: String) throws -> [UInt8] {
    [UInt8](try Data(contentsOf: parsingDirectory.appendingPathComponent(name)))
  }

  static func transformBytes(_ name: String) throws -> [UInt8] {
    [UInt8](try Data(contentsOf: transformDirectory.appendingPathComponent(name)))
  }
}

@Suite struct JSONConformanceTests {
  @Test func corpusIsPresentWhenRequired() {
    if !ConformanceCorpus.isPresent {
      // Not required: the tests below are skipped, each with `absentMessage` as the reason.
      if ConformanceCorpus.isRequired {
        Issue.record("CCSYNC_REQUIRE_CONFORMANCE=1 but JSONTestSuite is missing at \(ConformanceCorpus.parsingDirectory.path)")
      }
      return
    }
    // A corpus that is there but empty or renamed would make every test below vacuous.
    #expect(ConformanceCorpus.parsingFiles("y_").count >= 90)
    #expect(ConformanceCorpus.parsingFiles("n_").count >= 180)
    #expect(ConformanceCorpus.parsingFiles("i_").count >= 30)
  }

  @Test(.enabled(if: ConformanceCorpus.isPresent, ConformanceCorpus.absentMessage),
        arguments: ConformanceCorpus.parsingFiles("y_"))
  func acceptsEveryYesCase(name: String) throws {
    let bytes = try ConformanceCorpus.parsingBytes(name)
    let value = try JSONValue(parsing: bytes)
    // What we accept we can also print and read back unchanged.
    #expect(try JSONValue(parsing: value.formatted(.compact)) == value)
    #expect(try JSONValue(parsing: value.formatted(.pretty)) == value)
  }

  @Test(.enabled(if: ConformanceCorpus.isPresent, ConformanceCorpus.absentMessage),
        arguments: ConformanceCorpus.parsingFiles("n_"))
  func rejectsEveryNoCase(name: String) throws {
    let bytes = try ConformanceCorpus.parsingBytes(name)
    #expect(throws: JSONParseError.self) { try JSONValue(parsing: bytes) }
  }

  /// Implementation-defined cases: each either parses to a value that prints and parses back
  /// equal, or fails with an error placed inside the input (a crash or hang would take the
  /// test run down).
  @Test(.enabled(if: ConformanceCorpus.isPresent, ConformanceCorpus.absentMessage))
  func decidesEveryImplementationDefinedCase() throws {
    for name in ConformanceCorpus.parsingFiles("i_") {
      let bytes = try ConformanceCorpus.parsingBytes(name)
      do {
        let value = try JSONValue(parsing: bytes)
        #expect(try JSONValue(parsing: value.formattedBytes(.compact)) == value, "\(name)")
      } catch {
        #expect(error.offset >= 0 && error.offset <= bytes.count && error.line >= 1 && error.column >= 1, "\(name): \(error)")
      }
    }
  }

  /// Our policy for the i_ cases that matter to us: big numbers are kept as text; anything
  /// that is not valid UTF-8 or that a Swift String cannot hold is rejected; 500 levels fit
  /// the default limit; a byte order mark is rejected.
  @Test(.enabled(if: ConformanceCorpus.isPresent, ConformanceCorpus.absentMessage),
        arguments: [
          ("i_number_huge_exp.json", nil),
          ("i_number_too_big_pos_int.json", nil),
          ("i_number_very_big_negative_int.json", nil),
          ("i_structure_500_nested_arrays.json", nil),
          ("i_string_invalid_utf-8.json", JSONParseError.Kind.invalidUTF8),
          ("i_string_overlong_sequence_2_bytes.json", .invalidUTF8),
          ("i_string_overlong_sequence_6_bytes_null.json", .invalidUTF8),
          ("i_string_UTF8_surrogate_U+D800.json", .invalidUTF8),
          ("i_string_not_in_unicode_range.json", .invalidUTF8),
          ("i_string_truncated-utf-8.json", .invalidUTF8),
          ("i_string_lone_utf8_continuation_byte.json", .invalidUTF8),
          ("i_string_iso_latin_1.json", .invalidUTF8),
          ("i_string_1st_surrogate_but_2nd_missing.json", .loneSurrogate),
          ("i_string_invalid_lonely_surrogate.json", .loneSurrogate),
          ("i_string_inverted_surrogates_U+1D11E.json", .loneSurrogate),
          ("i_object_key_lone_2nd_surrogate.json", .loneSurrogate),
          ("i_structure_UTF-8_BOM_empty_object.json", .byteOrderMark),
        ] as [(String, JSONParseError.Kind?)])
  func implementationDefinedPolicy(name: String, expectedError: JSONParseError.Kind?) throws {
    let bytes = try ConformanceCorpus.parsingBytes(name)
    if let expectedError {
      let error = #expect(throws: JSONParseError.self) { try JSONValue(parsing: bytes) }
      #expect(error?.kind == expectedError, "\(name): \(String(describing: error))")
    } else {
      let value = try JSONValue(parsing: bytes)
      #expect(value.formatted(.compact).utf8.elementsEqual(bytes.prefix { $0 != 0x0A }))
    }
  }

  // MARK: test_transform

  /// Numbers keep their text exactly, however large, small or precise.
  @Test(.enabled(if: ConformanceCorpus.isPresent, ConformanceCorpus.absentMessage),
        arguments: [
          "number_-9223372036854775808.json", "number_-9223372036854775809.json",
          "number_1.0.json", "number_1.000000000000000005.json", "number_1000000000000000.json",
          "number_10000000000000000999.json", "number_1e-999.json", "number_1e6.json",
          "number_9223372036854775807.json", "number_9223372036854775808.json",
        ])
  func transformNumbersKeepTheirText(name: String) throws {
    let bytes = try ConformanceCorpus.transformBytes(name)
    let value = try JSONValue(parsing: bytes)
    let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    #expect(value.formatted(.compact) == text)
  }

  @Test(.enabled(if: ConformanceCorpus.isPresent, ConformanceCorpus.absentMessage))
  func transformDuplicateKeysKeepTheLastValue() throws {
    let different = try JSONValue(parsing: ConformanceCorpus.transformBytes("object_same_key_different_values.json"))
    #expect(different.formatted(.compact) == #"{"a":2}"#)
    let same = try JSONValue(parsing: ConformanceCorpus.transformBytes("object_same_key_same_value.json"))
    #expect(same.formatted(.compact) == #"{"a":1}"#)
    let unclear = try JSONValue(parsing: ConformanceCorpus.transformBytes("object_same_key_unclear_values.json"))
    #expect(unclear.formatted(.compact) == #"{"a":-0}"#)
    let rejecting = JSONParser.Options(duplicateKeys: .reject)
    let error = #expect(throws: JSONParseError.self) {
      try JSONValue(parsing: ConformanceCorpus.transformBytes("object_same_key_same_value.json"), options: rejecting)
    }
    // The place of a key is its opening quote, as for every other string error.
    #expect(error?.description == #"duplicate key "a" at line 1, column 8"#)
  }

  /// Keys are compared by bytes: precomposed and decomposed `é` are two different keys, and
  /// both are kept, in order.
  @Test(.enabled(if: ConformanceCorpus.isPresent, ConformanceCorpus.absentMessage),
        arguments: ["object_key_nfc_nfd.json", "object_key_nfd_nfc.json"])
  func transformNormalizationDoesNotMergeKeys(name: String) throws {
    let bytes = try ConformanceCorpus.transformBytes(name)
    let value = try JSONValue(parsing: bytes, options: .init(duplicateKeys: .reject))
    #expect(value.objectValue?.count == 2)
    #expect(value.formatted(.compact).utf8.elementsEqual(bytes))
  }

  @Test(.enabled(if: ConformanceCorpus.isPresent, ConformanceCorpus.absentMessage))
  func transformStrings() throws {
    let null = try JSONValue(parsing: ConformanceCorpus.transformBytes("string_with_escaped_NULL.json"))
    #expect(null == ["A\u{0}B"])
    #expect(null.formatted(.compact) == #"["A\u0000B"]"#)
    for name in ["string_1_escaped_invalid_codepoint.json", "string_2_escaped_invalid_codepoints.json",
                 "string_3_escaped_invalid_codepoints.json"] {
      let error = #expect(throws: JSONParseError.self) { try JSONValue(parsing: ConformanceCorpus.transformBytes(name)) }
      #expect(error?.kind == .loneSurrogate, "\(name)")
    }
    for name in ["string_1_invalid_codepoint.json", "string_2_invalid_codepoints.json",
                 "string_3_invalid_codepoints.json"] {
      let error = #expect(throws: JSONParseError.self) { try JSONValue(parsing: ConformanceCorpus.transformBytes(name)) }
      #expect(error?.kind == .invalidUTF8, "\(name)")
      #expect(error?.column == 3, "\(name)")
    }
  }
}
