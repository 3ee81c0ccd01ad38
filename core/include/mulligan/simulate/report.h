// mulligan/simulate/report.h — what one run of `mulligan simulate` measured,
// per mode, and its CSV and JSON forms. (Added in 0.6.)
//
// Every time is virtual (the event queue's), so a report depends only on the
// scenario and its seed: the same seed gives the same bytes.
//
// Thread-safety: plain values; the functions are reentrant.
#ifndef MULLIGAN_SIMULATE_REPORT_H_
#define MULLIGAN_SIMULATE_REPORT_H_

#include <cstdint>
#include <string>
#include <vector>

namespace mulligan {
inline namespace v0 {

// One mode's numbers. (Added in 0.6.)
struct ModeReport {
  std::string mode;
  // The run's client count (a sweep has one row per count and mode). (0.6)
  int clients = 0;
  // Logical calls made by the fleet (clients * calls per client).
  int64_t calls = 0;
  // Attempts that reached the service ("total calls" in the AWS study).
  int64_t attempts = 0;
  // Work amplification: attempts / calls (calls == clients in the OCC model).
  double amplification = 0;
  // When the last logical call ended, virtual seconds since the start.
  double completion_s = 0;
  // Latency of the logical calls (first Admit to the last answer or the
  // refusal), nearest-rank percentiles, virtual milliseconds.
  double p50_ms = 0;
  double p99_ms = 0;
  // Calls that succeeded, and calls that gave up (every other ending).
  int64_t successes = 0;
  int64_t give_ups = 0;
  // Give-ups by cause: a budget refused the retry, adaptive throttling
  // rejected an attempt, an open breaker refused one (all local: the
  // service never saw the refused attempt).
  int64_t budget_stops = 0;
  int64_t throttled = 0;
  int64_t circuit_open = 0;
  // Capacity model: attempts that arrived while the service was down, and
  // attempts refused for capacity (503) outside the outage: the retry storm.
  int64_t outage_attempts = 0;
  int64_t overloaded = 0;
  // Capacity model: when the last capacity 503 was answered (virtual s), -1
  // when none was: how long the storm kept the recovered server overloaded.
  double last_overload_s = -1;
  // Hedging modes (0.6): the copies after the first that reached the
  // service (counted in `attempts` too), the calls a hedge won, and the
  // extra load of the hedges: 100 * hedges / calls, percent (issue 18's
  // extra-load ratio, hedges started per call, as a percentage). 0 for a
  // mode without hedging.
  int64_t hedges = 0;
  int64_t hedges_won = 0;
  double extra_load_pct = 0;
};

// A whole run. (Added in 0.6.)
struct SimulationReport {
  std::string scenario;  // the scenario's name
  std::string model;     // "occ" or "capacity"
  uint64_t seed = 0;
  int clients = 0;
  // A sweep's client counts, in the order run (0.6); empty for one run.
  std::vector<int> sweep;
  // One per mode; a sweep: one per (count, mode), the counts in sweep order.
  std::vector<ModeReport> modes;
};

// The CSV columns, in order (RFC 4180: a header line, one line per mode, or
// per (clients, mode) for a sweep; a mode name with a comma, quote or newline
// is quoted). 0.6 added "clients" (second) and the three hedging columns
// (last).
extern const char* const kSimCsvColumns[];
extern const int kSimCsvColumnCount;

// Returns the CSV text (header + one row per mode, "\n" line ends). Numbers
// are printed with fixed decimals: times 3 (ms or s), amplification 4.
std::string ReportToCsv(const SimulationReport& report);

// Returns the JSON text: {"scenario", "model", "seed", "clients" (one run)
// or "sweep" (the counts of a sweep), "modes": [{<the CSV columns>}...]},
// the same numbers as the CSV.
std::string ReportToJson(const SimulationReport& report);

// The nearest-rank percentile (0 < p <= 100) of `values`, which it reorders
// (std::nth_element); 0 for an empty vector.
int64_t NearestRankPercentile(std::vector<int64_t>& values, double p);

}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_SIMULATE_REPORT_H_
