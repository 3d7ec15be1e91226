// Timing for the benchmarks: calibrated batches, several rounds, the median.

/// Keeps a result alive so the optimizer cannot drop the work that made it.
@inline(never)
func blackHole<T>(_ value: T) {
  withExtendedLifetime(value) {}
}

/// Runs `body` in `rounds` batches of enough iterations to take about `batchSeconds` each
/// and returns the median time of one iteration, in seconds.
func medianSeconds(rounds: Int, batchSeconds: Double = 0.05, _ body: () throws -> Void) rethrows -> Double {
  let clock = ContinuousClock()
  // Warm up (caches, allocator, lazy initialisation), then calibrate on one call.
  try body()
  let start = clock.now
  try body()
  let once = max(seconds(clock.now - start), 1e-7)
  let iterations = max(1, Int(batchSeconds / once))
  var samples: [Double] = []
  for _ in 0..<max(1, rounds) {
    let start = clock.now
    for _ in 0..<iterations { try body() }
    samples.append(seconds(clock.now - start) / Double(iterations))
  }
  return median(samples)
}

/// Times `first` and `second` in alternating batches of about `batchSeconds` (which goes
/// first alternates too), so that both see the same load in each round. Returns each one's
/// median time per iteration and the median of the rounds' `second / first` ratios.
func pairedMedianSeconds(
  rounds: Int, batchSeconds: Double = 0.05, _ first: () throws -> Void, _ second: () throws -> Void
) rethrows -> (first: Double, second: Double, secondOverFirst: Double) {
  let clock = ContinuousClock()
  func calibrated(_ body: () throws -> Void) rethrows -> Int {
    try body()
    let start = clock.now
    try body()
    return max(1, Int(batchSeconds / max(seconds(clock.now - start), 1e-7)))
  }
  func batch(_ iterations: Int, _ body: () throws -> Void) rethrows -> Double {
    let start = clock.now
    for _ in 0..<iterations { try body() }
    return seconds(clock.now - start) / Double(iterations)
  }
  let firstIterations = try calibrated(first)
  let secondIterations = try calibrated(second)
  var firstSamples: [Double] = []
  var secondSamples: [Double] = []
  var ratios: [Double] = []
  for round in 0..<max(1, rounds) {
    let a: Double
    let b: Double
    if round % 2 == 0 {
      a = try batch(firstIterations, first)
      b = try batch(secondIterations, second)
    } else {
      b = try batch(secondIterations, second)
      a = try batch(firstIterations, first)
    }
    firstSamples.append(a)
    secondSamples.append(b)
    ratios.append(b / a)
  }
  return (median(firstSamples), median(secondSamples), median(ratios))
}

func median(_ samples: [Double]) -> Double {
  let sorted = samples.sorted()
  if sorted.count % 2 == 1 { return sorted[sorted.count / 2] }
  return (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

func seconds(_ duration: Duration) -> Double {
  let (whole, attoseconds) = duration.components
  return Double(whole) + Double(attoseconds) / 1e18
}

/// `value` with `decimals` digits after the point, right-aligned in `width` columns.
func fixed(_ value: Double, _ decimals: Int, width: Int = 0) -> String {
  var scale = 1.0
  for _ in 0..<decimals { scale *= 10 }
  let scaled = Int((abs(value) * scale).rounded())
  var text = String(scaled / Int(scale))
  if decimals > 0 {
    let fraction = String(scaled % Int(scale))
    text += "." + String(repeating: "0", count: decimals - fraction.count) + fraction
  }
  if value < 0 { text = "-" + text }
  return padded(text, width)
}

func padded(_ text: String, _ width: Int, left: Bool = false) -> String {
  let padding = String(repeating: " ", count: max(0, width - text.count))
  return left ? text + padding : padding + text
}
