// core/src/simulate/report.cc — the report's CSV and JSON (report.h).
#include "mulligan/simulate/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <boost/json.hpp>

namespace mulligan {
inline namespace v0 {
namespace {

namespace json = boost::json;

std::string Fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

// The row of one mode as text fields, in kSimCsvColumns' order.
std::vector<std::string> Row(const ModeReport& m) {
  return {m.mode,
          std::to_string(m.clients),
          std::to_string(m.calls),
          std::to_string(m.attempts),
          Fixed(m.amplification, 4),
          Fixed(m.completion_s, 3),
          Fixed(m.p50_ms, 3),
          Fixed(m.p99_ms, 3),
          std::to_string(m.successes),
          std::to_string(m.give_ups),
          std::to_string(m.budget_stops),
          std::to_string(m.throttled),
          std::to_string(m.circuit_open),
          std::to_string(m.outage_attempts),
          std::to_string(m.overloaded),
          Fixed(m.last_overload_s, 3),
          std::to_string(m.hedges),
          std::to_string(m.hedges_won),
          Fixed(m.extra_load_pct, 3)};
}

}  // namespace

const char* const kSimCsvColumns[] = {
    "mode",         "clients",         "calls",      "attempts",        "amplification",
    "completion_s", "p50_ms",          "p99_ms",     "successes",       "give_ups",
    "budget_stops", "throttled",       "circuit_open", "outage_attempts", "overloaded",
    "last_overload_s", "hedges",       "hedges_won", "extra_load_pct"};
const int kSimCsvColumnCount = sizeof(kSimCsvColumns) / sizeof(kSimCsvColumns[0]);

std::string ReportToCsv(const SimulationReport& report) {
  std::string out;
  for (int i = 0; i < kSimCsvColumnCount; ++i) {
    if (i) out += ',';
    out += kSimCsvColumns[i];
  }
  out += '\n';
  for (const ModeReport& m : report.modes) {
    const std::vector<std::string> row = Row(m);
    for (size_t i = 0; i < row.size(); ++i) {
      if (i) out += ',';
      out += i == 0 ? CsvField(row[i]) : row[i];
    }
    out += '\n';
  }
  return out;
}

std::string ReportToJson(const SimulationReport& report) {
  json::array modes;
  for (const ModeReport& m : report.modes) {
    const std::vector<std::string> row = Row(m);
    json::object o;
    o["mode"] = m.mode;
    for (int i = 1; i < kSimCsvColumnCount; ++i) {
      // The CSV's text, read back as a number: one rounding for both files.
      const std::string& text = row[static_cast<size_t>(i)];
      if (text.find('.') == std::string::npos) {
        o[kSimCsvColumns[i]] = std::stoll(text);
      } else {
        o[kSimCsvColumns[i]] = std::stod(text);
      }
    }
    modes.push_back(std::move(o));
  }
  json::object root;
  root["scenario"] = report.scenario;
  root["model"] = report.model;
  root["seed"] = report.seed;
  if (report.sweep.empty()) {
    root["clients"] = report.clients;
  } else {
    json::array counts;
    for (int n : report.sweep) counts.push_back(n);
    root["sweep"] = std::move(counts);
  }
  root["modes"] = std::move(modes);
  return json::serialize(root) + "\n";
}

int64_t NearestRankPercentile(std::vector<int64_t>& values, double p) {
  if (values.empty()) return 0;
  const double n = static_cast<double>(values.size());
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * n));
  rank = std::clamp<size_t>(rank, 1, values.size());
  auto nth = values.begin() + static_cast<std::ptrdiff_t>(rank - 1);
  std::nth_element(values.begin(), nth, values.end());
  return *nth;
}

}  // namespace v0
}  // namespace mulligan
