import Foundation
import Testing
import CCSyncJSON

/// What a file's history must be after a power cut (docs/SEMANTICS.md, "History"): `ccsync
/// log` runs, exits 0 and lists the current version first; every older version it lists is
/// kept as the very file its line in `versions.log` names (device and inode: never another
/// version's file under its id) and is one complete version; every file in the folder is one
/// complete version. Missing ones are allowed (lines and links are not made durable), and so
/// are kept files no line lists; both are counted.
struct PowerCutHistoryCheck {
  /// Counts over every check, for the figures.
  var listed = 0
  var unlisted = 0
  /// Lines of the window (the last 20 ids) whose version is not kept.
  var missing = 0

  /// The history folder of the file at `path`.
  static func folder(of path: String) -> String {
    let url = URL(fileURLWithPath: path)
    return url.deletingLastPathComponent().path + "/." + url.lastPathComponent + ".history"
  }

  /// The lines of `versions.log` that parse: id -> (device, inode), the last line of an id
  /// winning, as the library reads it.
  static func loggedFiles(in folder: String) -> [String: (device: Int64, inode: Int64)] {
    guard let data = FileManager.default.contents(atPath: folder + "/versions.log") else { return [:] }
    var files: [String: (device: Int64, inode: Int64)] = [:]
    for line in data.split(separator: UInt8(ascii: "\n")) {
      guard let object = (try? JSONValue(parsing: Array(line)))?.objectValue,
            let id = object["id"]?.numberValue?.int64Value,
            let device = object["device"]?.numberValue?.int64Value,
            let inode = object["inode"]?.numberValue?.int64Value else { continue }
      files[String(id)] = (device, inode)
    }
    return files
  }

  /// Checks the history of the file at `path` (written by `powercut-saves`, whose versions
  /// ``FaultPowerCutTests/classify(_:)`` recognises) after a cut.
  mutating func check(_ path: String, _ label: String) throws {
    let folder = Self.folder(of: path)
    let log = try CLI.run(["log", path, "--json"])
    #expect(log.status == 0, "\(label): ccsync log: \(log.summary)")
    guard log.status == 0 else { return }
    let shown = (try? JSONValue(parsing: Array(log.standardOutput.utf8)))?.arrayValue ?? []
    #expect(shown.first?.objectValue?["current"]?.boolValue == true, "\(label): ccsync log does not list the current version first: \(log.standardOutput.prefix(300))")
    let logged = Self.loggedFiles(in: folder)
    var listedIDs = Set<String>()
    for version in shown.dropFirst() {
      guard let id = version.objectValue?["id"]?.stringValue else {
        Issue.record("\(label): a version without an id in ccsync log: \(version.formatted(.compact))")
        continue
      }
      listedIDs.insert(id)
      let kept = "\(folder)/\(id).json"
      var status = stat()
      guard lstat(kept, &status) == 0 else {
        Issue.record("\(label): ccsync log lists version \(id), whose file \(kept) is missing")
        continue
      }
      if let line = logged[id] {
        #expect(Int64(status.st_ino) == line.inode && Int64(status.st_dev) == line.device,
                "\(label): version \(id) is kept as inode \(status.st_ino), its line names inode \(line.inode): another version's file under its id")
      } else {
        Issue.record("\(label): ccsync log lists version \(id), which versions.log does not")
      }
      let found = FaultPowerCutTests.classify(kept)
      #expect(found.version != nil, "\(label): kept version \(id) is \(found)")
    }
    listed += listedIDs.count
    let currentID = shown.first?.objectValue?["id"]?.stringValue
    // Lines in the window (the 20 kept by default, below the newest line) with no version kept.
    let newest = logged.keys.compactMap { Int($0) }.max() ?? 0
    missing += logged.keys.filter { id in
      !listedIDs.contains(id) && id != currentID && (Int(id) ?? 0) > newest - 21
    }.count
    let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
    for name in names where name.hasSuffix(".json") {
      let found = FaultPowerCutTests.classify(folder + "/" + name)
      #expect(found.version != nil, "\(label): the kept file \(name) is \(found)")
      if !listedIDs.contains(String(name.dropLast(".json".count))) { unlisted += 1 }
    }
  }

  /// Reports the counts as `fault-figure power-cuts.NAME.history-*`.
  func report(_ name: String) {
    FaultTools.report("power-cuts.\(name).history-listed", listed)
    FaultTools.report("power-cuts.\(name).history-lines-in-window-not-kept", missing)
    FaultTools.report("power-cuts.\(name).history-files-not-listed", unlisted)
  }
}
