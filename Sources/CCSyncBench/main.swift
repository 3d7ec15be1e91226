// ccsync-bench: one subcommand per benchmark. Build and run in release mode:
// `swift run -c release ccsync-bench codec`; `bench/run` drives the others.

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "codec":
  CodecBenchmark.run(arguments: Array(arguments.dropFirst()))
case "schema":
  SchemaBenchmark.run(arguments: Array(arguments.dropFirst()))
case "bench-worker":
  ContentionBenchmark.run(arguments: Array(arguments.dropFirst()))
case "propagation-reader":
  PropagationBenchmark.run(arguments: Array(arguments.dropFirst()))
case "watch-files":
  WatcherBenchmark.run(arguments: Array(arguments.dropFirst()))
case "lossless":
  LosslessBenchmark.run(arguments: Array(arguments.dropFirst()))
case "many-storages":
  ManyStoragesBenchmark.run(arguments: Array(arguments.dropFirst()))
case "many-storages-writer":
  ManyStoragesBenchmark.runWriter()
case "async-wakeup":
  AsyncWakeUpBenchmark.run(arguments: Array(arguments.dropFirst()))
default:
  print("OVERVIEW: CCSync benchmarks")
  print("")
  print("USAGE: ccsync-bench <subcommand>")
  print("")
  print("SUBCOMMANDS:")
  print("  codec                JSON parse, print, decode and encode speed against Foundation and Python")
  print("  schema               JSON Schema validation of a 10 KB document against parsing it")
  print("  bench-worker         one contender of the locked read-modify-write benchmark (bench/run)")
  print("  propagation-reader   the watching end of the propagation benchmark (bench/run)")
  print("  watch-files          a process watching N files, for memory and CPU (bench/run)")
  print("  lossless             the lossless JSON/JWCC document against whole parse and print")
  print("  many-storages        N `key:` storages in one process: create, set + flush, threads, another's write seen")
  print("  async-wakeup         a sleeping task's wake-up delay while 64 tasks await contended updates")
  print("")
  print(CodecBenchmark.usage)
  print(SchemaBenchmark.usage)
  print(ContentionBenchmark.usage)
  print(PropagationBenchmark.usage)
  print(WatcherBenchmark.usage)
  print(LosslessBenchmark.usage)
  print(AsyncWakeUpBenchmark.usage)
  print(ManyStoragesBenchmark.usage)
}
