// ccsync-bench: one subcommand per benchmark. Build and run in release mode:
// `swift run -c release ccsync-bench codec`.

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "codec":
  CodecBenchmark.run(arguments: Array(arguments.dropFirst()))
default:
  print("OVERVIEW: CCSync benchmarks")
  print("")
  print("USAGE: ccsync-bench <subcommand>")
  print("")
  print("SUBCOMMANDS:")
  print("  codec   JSON parse, print, decode and encode speed against Foundation and Python")
  print("")
  print(CodecBenchmark.usage)
}
