// swift-tools-version: 6.0
import PackageDescription

let package = Package(
  name: "ccsync",
  products: [
    .library(name: "CCSync", targets: ["CCSync"]),
    .executable(name: "ccsync", targets: ["CCSyncCLI"]),
  ],
  targets: [
    .target(name: "CCSync", dependencies: ["CCSyncSystemShims"]),
    // Declarations Glibc's module map leaves out (extended attributes); used by System/ only.
    .target(name: "CCSyncSystemShims"),
    .executableTarget(name: "CCSyncCLI", dependencies: ["CCSync"]),
    // Child process the multi-process tests spawn; not a product.
    .executableTarget(name: "CCSyncTestHelper", dependencies: ["CCSync"]),
    .testTarget(
      name: "CCSyncTests",
      dependencies: ["CCSync", "CCSyncCLI", "CCSyncTestHelper"]
    ),
  ],
  swiftLanguageModes: [.v6]
)
