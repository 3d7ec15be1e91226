import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

// `ccsync-bench schema`: JSON Schema validation against parsing, on a settings document of
// about 10 KB and a schema of its shape (types, required members, properties, one pattern).

enum SchemaBenchmark {
  static let usage = """
    USAGE: ccsync-bench schema [--rounds N] [--services N]
    """

  /// The codec benchmark's document type, described member by member.
  static let schemaText = #"""
    {
      "$schema": "https://json-schema.org/draft/2020-12/schema",
      "type": "object",
      "required": ["name", "version", "generatedBy", "defaults", "features", "services"],
      "properties": {
        "name": {"type": "string"},
        "version": {"type": "integer", "minimum": 1},
        "generatedBy": {"type": "string"},
        "defaults": {"$ref": "#/$defs/limits"},
        "features": {
          "type": "object",
          "required": ["search", "uploads", "darkMode", "betaChannel", "telemetry", "maxUploadBytes", "sampleRate"],
          "properties": {
            "search": {"type": "boolean"}, "uploads": {"type": "boolean"}, "darkMode": {"type": "boolean"},
            "betaChannel": {"type": "boolean"}, "telemetry": {"type": "boolean"},
            "maxUploadBytes": {"type": "integer", "minimum": 0}, "sampleRate": {"type": "number", "minimum": 0, "maximum": 1}
          }
        },
        "services": {"type": "array", "items": {"$ref": "#/$defs/service"}}
      },
      "$defs": {
        "limits": {
          "type": "object",
          "required": ["cpu", "memoryBytes", "connections", "requestsPerSecond", "burst", "timeoutSeconds"],
          "properties": {
            "cpu": {"type": "number"}, "memoryBytes": {"type": "integer"}, "connections": {"type": "integer"},
            "requestsPerSecond": {"type": "integer"}, "burst": {"type": "integer"}, "timeoutSeconds": {"type": "number"}
          }
        },
        "service": {
          "type": "object",
          "required": ["id", "name", "description", "host", "port", "weight", "enabled", "region", "tags", "labels", "owner", "limits", "endpoints", "maintenance", "checksum"],
          "properties": {
            "id": {"type": "integer"},
            "name": {"type": "string"},
            "description": {"type": "string"},
            "host": {"type": "string", "pattern": "^[a-z0-9.-]+$"},
            "port": {"type": "integer", "minimum": 1, "maximum": 65535},
            "weight": {"type": "number"},
            "enabled": {"type": "boolean"},
            "region": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "owner": {
              "type": "object",
              "required": ["name", "email", "uid", "team", "onCall"],
              "properties": {
                "name": {"type": "string"}, "email": {"type": "string"}, "uid": {"type": "integer"},
                "team": {"type": "string"}, "onCall": {"type": "boolean"}
              }
            },
            "limits": {"$ref": "#/$defs/limits"},
            "endpoints": {
              "type": "array",
              "items": {
                "type": "object",
                "required": ["path", "method", "timeoutSeconds", "retries", "authenticated"],
                "properties": {
                  "path": {"type": "string"}, "method": {"type": "string"}, "timeoutSeconds": {"type": "number"},
                  "retries": {"type": "integer"}, "authenticated": {"type": "boolean"}
                }
              }
            },
            "maintenance": {
              "type": "object",
              "properties": {"window": {"type": ["string", "null"]}, "contact": {"type": ["string", "null"]}, "paused": {"type": "boolean"}}
            },
            "checksum": {"type": "integer"}
          }
        }
      }
    }
    """#

  static func run(arguments: [String]) {
    var rounds = 15
    var services = 14
    var remaining = arguments[...]
    while let argument = remaining.popFirst() {
      switch argument {
      case "--rounds":
        guard let value = remaining.popFirst().flatMap({ Int($0) }), value > 0 else { fail("--rounds needs a positive number") }
        rounds = value
      case "--services":
        guard let value = remaining.popFirst().flatMap({ Int($0) }), value > 0 else { fail("--services needs a positive number") }
        services = value
      case "-h", "--help":
        print(usage)
        return
      default:
        fail("Unknown option '\(argument)'")
      }
    }
    do {
      let document = try JSONValueEncoder().encode(CodecDocument.generate(serviceCount: services))
      let bytes = document.formattedBytes(.pretty)
      let schema = try JSONSchema(JSONValue(parsing: schemaText))
      guard schema.isValid(document), schema.validate(document).isEmpty else { fail("the document does not match its schema") }
      let schemaValue = try JSONValue(parsing: schemaText)
      let compile = try medianSeconds(rounds: rounds) { blackHole(try JSONSchema(schemaValue)) }
      // Each validation is timed in rounds alternating with the parse, and the ratio taken
      // round by round: steadier than two medians on a shared machine.
      let parse = { blackHole(try? JSONParser().parse(bytes)) }
      let isValid = pairedMedianSeconds(rounds: rounds, parse) { blackHole(schema.isValid(document)) }
      let validate = pairedMedianSeconds(rounds: rounds, parse) { blackHole(schema.validate(document)) }
      print("schema benchmark: \(bytes.count)-byte document (\(services) services), median of \(rounds) rounds")
      print("  compile schema         \(format(compile))")
      print("  parse document         \(format(isValid.first))")
      print("  isValid                \(format(isValid.second))  (\(percent(isValid.secondOverFirst)) of parse time)")
      print("  validate               \(format(validate.second))  (\(percent(validate.secondOverFirst)) of parse time)")
    } catch {
      fail("schema benchmark failed: \(error)")
    }
  }

  static func format(_ seconds: Double) -> String {
    let microseconds = (seconds * 1_000_000 * 10).rounded() / 10
    return "\(microseconds) µs"
  }

  static func percent(_ ratio: Double) -> String {
    "\(Int((ratio * 100).rounded()))%"
  }

  static func fail(_ message: String) -> Never {
    StandardStreams.writeLine("Error: \(message)\n\(usage)", toStandardError: true)
    ThisProcess.exit(64)
  }
}
