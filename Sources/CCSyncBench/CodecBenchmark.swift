// Placeholder: branch json-speed replaces this file with the `codec` benchmark.
enum CodecBenchmark {
  static let usage = "USAGE: ccsync-bench codec (not in this build)"

  static func run(arguments: [String]) {
    print(usage)
  }
}
