import Foundation

/// The package's root directory, the one holding Package.swift, found from this file's place
/// in it: Tests/CCSyncTests/Support/PackageRoot.swift.
let packageRoot = URL(fileURLWithPath: #filePath)
  .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
