// swift-tools-version: 6.0
import PackageDescription

// The layers, each a target the compiler holds to (docs/ARCHITECTURE.md, "Layers"):
// CCSyncSystem (the only library code that imports Glibc) <- CCSyncJSON <- CCSync (the
// library users import) <- CCSyncCLI. The command's own process code (child processes, signal
// pipes, standard input) is CCSyncProcesses, a system target kept out of the library.
let package = Package(
  name: "ccsync",
  products: [
    .library(name: "CCSync", targets: ["CCSync"]),
    .executable(name: "ccsync", targets: ["CCSyncCLI"]),
    .executable(name: "ccsync-bench", targets: ["CCSyncBench"]),
  ],
  targets: [
    // Thin Glibc wrappers: descriptors, stat, flock, rename, fsync, inotify, poll, signals.
    .target(name: "CCSyncSystem", dependencies: ["CCSyncSystemShims"]),
    // Declarations Glibc's module map leaves out (extended attributes); used by CCSyncSystem only.
    .target(name: "CCSyncSystemShims"),
    // JSON values with ordered keys and exact number text, parser, printer, paths, change
    // sets, the Codable coder. No I/O.
    .target(name: "CCSyncJSON", dependencies: ["CCSyncSystem"]),
    // An HTTP/1.1 client over TCP and a client of etcd's v3 JSON gateway. No Glibc.
    .target(name: "CCSyncEtcd", dependencies: ["CCSyncSystem", "CCSyncJSON"]),
    // The library: stores, documents, CodableStorage. Re-exports CCSyncJSON's public types.
    .target(name: "CCSync", dependencies: ["CCSyncSystem", "CCSyncJSON", "CCSyncEtcd"]),
    // Child processes, signal pipes and standard input, for the command and the test tools.
    .target(name: "CCSyncProcesses", dependencies: ["CCSyncSystem", "CCSyncSystemShims"]),
    .executableTarget(name: "CCSyncCLI", dependencies: ["CCSync", "CCSyncEtcd", "CCSyncProcesses"]),
    // Benchmarks against Foundation and Python (`swift run -c release ccsync-bench codec`).
    .executableTarget(name: "CCSyncBench", dependencies: ["CCSync", "CCSyncProcesses"]),
    // Child process the multi-process tests spawn; not a product.
    .executableTarget(name: "CCSyncTestHelper", dependencies: ["CCSync", "CCSyncProcesses"]),
    .testTarget(
      name: "CCSyncTests",
      dependencies: [
        "CCSync", "CCSyncSystem", "CCSyncJSON", "CCSyncEtcd", "CCSyncProcesses", "CCSyncCLI", "CCSyncBench", "CCSyncTestHelper",
      ]
    ),
  ],
  swiftLanguageModes: [.v6]
)
