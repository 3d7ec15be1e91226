/// `ccsync stress --plot FILE.svg`: the wait distribution (the log-scale histogram, with the
/// p50, p99 and max marked) above the rate over time (operations per second, and the p99
/// wait of each second), as SVG text written by hand.
///
/// The series carry ids a script or a test can find: `wait-distribution` (one `rect` of
/// class `bucket` per histogram bucket), `percentiles` (one `line` per marker), `rate` (a
/// `polyline` of operations per second) and `wait-p99` (a `polyline` of each second's p99).
enum StressPlot {
  static let width = 800.0
  static let panelHeight = 260.0
  static let margin = (left: 70.0, right: 70.0, top: 40.0, bottom: 50.0)

  /// The SVG document for `report`.
  static func svg(_ report: StressReport) -> String {
    let height = margin.top + panelHeight * 2 + margin.bottom * 2
    var out = """
      <?xml version="1.0" encoding="UTF-8"?>
      <svg xmlns="http://www.w3.org/2000/svg" width="\(number(width))" height="\(number(height))" viewBox="0 0 \(number(width)) \(number(height))" font-family="sans-serif" font-size="11">
      <title>\(escape("ccsync stress: \(report.processes) processes x \(report.threads) threads, \(report.workload.mode.rawValue)"))</title>
      <rect width="100%" height="100%" fill="white"/>

      """
    out += distribution(report, top: margin.top)
    out += timeline(report, top: margin.top + panelHeight + margin.bottom)
    out += "</svg>\n"
    return out
  }

  /// The histogram: one bar per bucket, bucket bounds on a log axis, counts on a linear one.
  private static func distribution(_ report: StressReport, top: Double) -> String {
    let plotWidth = width - margin.left - margin.right
    let plotHeight = panelHeight - 30
    let buckets = report.histogram
    let largest = Double(buckets.map(\.count).max() ?? 1)
    let barWidth = buckets.isEmpty ? 0 : plotWidth / Double(buckets.count)
    var out = "<text x=\"\(number(margin.left))\" y=\"\(number(top - 12))\" font-size=\"13\">\(escape(report.overEtcd && report.workload.mode == .update ? "Time to a successful swap" : "Wait for the lock")) (\(report.operations) operations, log-scale buckets)</text>\n"
    out += axes(left: margin.left, top: top, width: plotWidth, height: plotHeight)
    out += "<g id=\"wait-distribution\" fill=\"#4878a8\">\n"
    for (index, bucket) in buckets.enumerated() {
      let barHeight = largest > 0 ? Double(bucket.count) / largest * plotHeight : 0
      let x = margin.left + Double(index) * barWidth
      let label = bucket.upperBound == .max ? "> 100 s" : "≤ " + StressStatistics.timeText(bucket.upperBound)
      out += "<rect class=\"bucket\" x=\"\(number(x + 1))\" y=\"\(number(top + plotHeight - barHeight))\" width=\"\(number(max(barWidth - 2, 1)))\" height=\"\(number(barHeight))\"><title>\(escape(label)): \(bucket.count)</title></rect>\n"
      out += "<text x=\"\(number(x + barWidth / 2))\" y=\"\(number(top + plotHeight + 14))\" text-anchor=\"middle\" font-size=\"9\">\(escape(label))</text>\n"
    }
    out += "</g>\n"
    out += "<text x=\"\(number(margin.left - 6))\" y=\"\(number(top + 4))\" text-anchor=\"end\">\(Int(largest))</text>\n"
    out += "<text x=\"\(number(margin.left - 6))\" y=\"\(number(top + plotHeight))\" text-anchor=\"end\">0</text>\n"
    // Markers: where p50, p99 and max fall, placed within their bucket on a log scale.
    out += "<g id=\"percentiles\" stroke-width=\"1.5\">\n"
    let markers = [("p50", report.wait.p50, "#2a9d3a"), ("p99", report.wait.p99, "#d08000"), ("max", report.wait.max, "#c03030")]
    for (row, (name, value, color)) in markers.enumerated() where !buckets.isEmpty {
      guard let x = position(of: value, in: buckets, left: margin.left, barWidth: barWidth) else { continue }
      out += "<line class=\"\(name)\" x1=\"\(number(x))\" y1=\"\(number(top))\" x2=\"\(number(x))\" y2=\"\(number(top + plotHeight))\" stroke=\"\(color)\" stroke-dasharray=\"4 3\"/>\n"
      // One row per marker: close percentiles would otherwise print over each other.
      out += "<text x=\"\(number(x + 3))\" y=\"\(number(top + 10 + 12 * Double(row)))\" fill=\"\(color)\">\(name) \(escape(StressStatistics.timeText(value)))</text>\n"
    }
    out += "</g>\n"
    return out
  }

  /// Operations per second (left axis) and each second's p99 wait (right axis) over the run.
  private static func timeline(_ report: StressReport, top: Double) -> String {
    let plotWidth = width - margin.left - margin.right
    let plotHeight = panelHeight - 30
    let seconds = report.timeline
    let highestRate = max(seconds.map(\.rate).max() ?? 1, 1)
    let highestWait = Double(max(seconds.map(\.waitP99).max() ?? 1, 1))
    let step = plotWidth / Double(max(seconds.count, 1))
    var out = "<text x=\"\(number(margin.left))\" y=\"\(number(top - 12))\" font-size=\"13\">Rate over time (operations per second, blue; p99 wait of the second, orange)</text>\n"
    out += axes(left: margin.left, top: top, width: plotWidth, height: plotHeight)
    func points(_ value: (StressStatistics.Second) -> Double, scale: Double) -> String {
      seconds.map { second in
        let x = margin.left + (Double(second.index) + 0.5) * step
        let y = top + plotHeight - value(second) / scale * plotHeight
        return "\(number(x)),\(number(y))"
      }.joined(separator: " ")
    }
    out += "<g id=\"rate\"><polyline class=\"rate\" fill=\"none\" stroke=\"#4878a8\" stroke-width=\"2\" points=\"\(points({ $0.rate }, scale: highestRate))\"/></g>\n"
    out += "<g id=\"wait-p99\"><polyline class=\"wait-p99\" fill=\"none\" stroke=\"#d08000\" stroke-width=\"1.5\" points=\"\(points({ Double($0.waitP99) }, scale: highestWait))\"/></g>\n"
    out += "<text x=\"\(number(margin.left - 6))\" y=\"\(number(top + 4))\" text-anchor=\"end\" fill=\"#4878a8\">\(Int(highestRate))/s</text>\n"
    out += "<text x=\"\(number(margin.left + plotWidth + 6))\" y=\"\(number(top + 4))\" fill=\"#d08000\">\(escape(StressStatistics.timeText(Int64(highestWait))))</text>\n"
    out += "<text x=\"\(number(margin.left + plotWidth / 2))\" y=\"\(number(top + plotHeight + 28))\" text-anchor=\"middle\">seconds since the start (\(seconds.count))</text>\n"
    return out
  }

  /// The x of `value` on the histogram: inside its bucket, by the log of its place between
  /// the bucket's bounds.
  private static func position(of value: Int64, in buckets: [StressStatistics.Bucket], left: Double, barWidth: Double) -> Double? {
    guard let index = buckets.firstIndex(where: { value <= $0.upperBound }) else { return nil }
    let upper = Double(buckets[index].upperBound == .max ? value : buckets[index].upperBound)
    let lower = index > 0 ? Double(buckets[index - 1].upperBound) : upper / 2
    var fraction = 1.0
    if upper > lower, value > 0 {
      fraction = min(max((logBase2(Double(value)) - logBase2(lower)) / (logBase2(upper) - logBase2(lower)), 0), 1)
    }
    return left + (Double(index) + fraction) * barWidth
  }

  /// The base-2 logarithm without a C library: the exponent, plus the significand's
  /// logarithm by the series of atanh (its argument is at most 1/3, so five terms do).
  static func logBase2(_ value: Double) -> Double {
    guard value > 0 else { return 0 }
    let significand = value.significand
    let y = (significand - 1) / (significand + 1)
    let y2 = y * y
    let natural = 2 * y * (1 + y2 / 3 + y2 * y2 / 5 + y2 * y2 * y2 / 7 + y2 * y2 * y2 * y2 / 9)
    return Double(value.exponent) + natural / 0.693_147_180_559_945_3
  }

  private static func axes(left: Double, top: Double, width: Double, height: Double) -> String {
    "<path d=\"M\(number(left)),\(number(top)) V\(number(top + height)) H\(number(left + width))\" fill=\"none\" stroke=\"#333\"/>\n"
  }

  /// A coordinate with one decimal.
  private static func number(_ value: Double) -> String { decimal(value, places: 1) }

  /// Text made safe for XML.
  static func escape(_ text: String) -> String {
    var out = ""
    for character in text {
      switch character {
      case "&": out += "&amp;"
      case "<": out += "&lt;"
      case ">": out += "&gt;"
      case "\"": out += "&quot;"
      default: out.append(character)
      }
    }
    return out
  }
}
