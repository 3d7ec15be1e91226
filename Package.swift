// swift-tools-version: 6.0
import PackageDescription

let package = Package(
  name: "ccsync",
  products: [
    .library(name: "CCSync", targets: ["CCSync"]),
    .executable(name: "ccsync", targets: ["CCSyncCLI"]),
    .executable(name: "ccsync-bench", targets: ["CCSyncBench"]),
  ],
  targets: [
    .target(name: "CCSync", dependencies: ["CCSyncSystemShims"]),
    // Declarations Glibc's module map leaves out (extended attributes); used by System/ only.
    .target(name: "CCSyncSystemShims"),
    .executableTarget(name: "CCSyncCLI", dependencies: ["CCSync"]),
    // Benchmarks against Foundation and Python (`swift run -c release ccsync-bench codec`).
    .executableTarget(name: "CCSyncBench", dependencies: ["CCSync"]),
    // Child process the multi-process tests spawn; not a product.
    .executableTarget(name: "CCSyncTestHelper", dependencies: ["CCSync"]),
    .testTarget(
      name: "CCSyncTests",
      dependencies: ["CCSync", "CCSyncCLI", "CCSyncTestHelper"]
    ),
  ],
  swiftLanguageModes: [.v6]
)
