// bench/hedge_tail_bench.cc — the C++ HttpClient's side of bench/hedge_tail.py:
// sequential GETs of one URL (nginx's slow-tail /tail), hedged or not, and
// the latency quantiles. (Added in 0.6.)
//
//   hedge_tail_bench URL CALLS [DELAY_MS [QUANTILE]]
//
// No DELAY_MS: no hedging. DELAY_MS (a number, milliseconds): 2 copies at
// most, the second DELAY_MS after the first; QUANTILE (e.g. 0.95): the delay
// is that quantile of recent winners' latencies once 20 are known. 20
// unmeasured calls warm the connections first. Prints one JSON object:
// {"p50":..,"p95":..,"p99":..,"p999":..} in milliseconds (nearest rank,
// client side, steady_clock). hedge_tail.py counts the requests nginx saw.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "mulligan/http/client.h"

namespace {

double Quantile(const std::vector<double>& sorted, double p) {
  const auto n = static_cast<double>(sorted.size());
  const size_t rank = static_cast<size_t>(std::clamp(std::ceil(p * n), 1.0, n));
  return sorted[rank - 1];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s URL CALLS [DELAY_MS [QUANTILE]]\n", argv[0]);
    return 2;
  }
  mulligan::HttpClientOptions options;
  options.retry.max_attempts = 1;
  options.report_metrics = false;
  if (argc > 3) {
    mulligan::HedgingOptions hedging;
    hedging.max_attempts = 2;
    hedging.hedging_delay = std::chrono::duration_cast<mulligan::Duration>(
        std::chrono::duration<double, std::milli>(std::atof(argv[3])));
    if (argc > 4) hedging.delay_quantile = std::atof(argv[4]);
    options.hedging = hedging;
  }
  auto client = mulligan::HttpClient::Create(options);
  if (!client.ok()) {
    std::fprintf(stderr, "%s\n", client.status().ToString().c_str());
    return 1;
  }
  mulligan::HttpRequest request;
  request.url = argv[1];
  const int calls = std::atoi(argv[2]);
  std::vector<double> ms;
  for (int i = 0; i < calls + 20; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = (*client)->Send(request);
    const auto t1 = std::chrono::steady_clock::now();
    if (!r.ok() || r->status != 200) {
      std::fprintf(stderr, "call %d failed: %s\n", i, r.ok() ? "status" : r.status().ToString().c_str());
      return 1;
    }
    if (i >= 20) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  std::printf("{\"p50\": %.3f, \"p95\": %.3f, \"p99\": %.3f, \"p999\": %.3f}\n", Quantile(ms, 0.5),
              Quantile(ms, 0.95), Quantile(ms, 0.99), Quantile(ms, 0.999));
  return 0;
}
