// bench/capi_outbox_bench.cc — what the C ABI of the durable outbox
// (mulligan_outbox.h) costs over the C++ mulligan::Outbox it wraps, measured
// in the same run on the same disk: N job entries enqueued one by one (one
// transaction each), then claimed 100 at a time and completed with one
// group commit per batch, for each sync mode. The two front doors alternate
// for --reps rounds (so that disk and load drift hit both; fsync times on a
// shared disk vary run to run) and each prints its median entries per
// second; the ratio is C ABI / C++ (1.0 = no overhead).
//
//   bench/capi_outbox_bench [--entries N] [--reps R] [--dir DIR]
//
// (Added in 0.6.)

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "mulligan.h"
#include "mulligan/outbox/outbox.h"

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

void Remove(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm"}) unlink((path + suffix).c_str());
}

struct Rates {
  double enqueue = 0;
  double deliver = 0;
};

Rates RunCxx(const std::string& path, mulligan::OutboxSync sync, int n) {
  Remove(path);
  mulligan::OutboxOptions o;
  o.path = path;
  o.sync = sync;
  auto box = mulligan::Outbox::Open(o);
  if (!box.ok()) {
    std::fprintf(stderr, "open: %s\n", box.status().ToString().c_str());
    std::exit(1);
  }
  mulligan::OutboxEntrySpec spec;
  spec.kind = mulligan::OutboxKind::kJob;
  spec.job = "bench";
  spec.payload = "{\"n\":1}";
  const auto t0 = Clock::now();
  for (int i = 0; i < n; ++i) {
    if (!(*box)->Enqueue(spec, std::chrono::system_clock::now()).ok()) std::exit(1);
  }
  const auto t1 = Clock::now();
  for (int done = 0; done < n;) {
    auto leases = (*box)->Lease("w", 100, std::chrono::system_clock::now());
    if (!leases.ok() || leases->empty()) std::exit(1);
    std::vector<mulligan::OutboxSuccess> ok;
    for (const auto& l : *leases) ok.push_back({&l, 0});
    if (!(*box)->CompleteMany(ok, std::chrono::system_clock::now()).ok()) std::exit(1);
    done += static_cast<int>(leases->size());
  }
  const auto t2 = Clock::now();
  box->reset();
  Remove(path);
  return {n / Seconds(t0, t1), n / Seconds(t1, t2)};
}

Rates RunC(const std::string& path, int sync, int n) {
  Remove(path);
  mulligan_outbox_options* o = nullptr;
  mulligan_outbox* box = nullptr;
  mulligan_outbox_options_create(&o);
  mulligan_outbox_options_set_sync(o, sync);
  if (mulligan_outbox_open(path.c_str(), o, &box) != MULLIGAN_OK) {
    std::fprintf(stderr, "open: %s\n", mulligan_last_error());
    std::exit(1);
  }
  mulligan_outbox_options_destroy(o);
  mulligan_outbox_spec spec = MULLIGAN_OUTBOX_SPEC_INIT;
  spec.kind = MULLIGAN_OUTBOX_JOB;
  spec.job = "bench";
  spec.payload = "{\"n\":1}";
  spec.payload_len = 7;
  const auto t0 = Clock::now();
  for (int i = 0; i < n; ++i) {
    if (mulligan_outbox_enqueue(box, &spec, nullptr, nullptr, 0) != MULLIGAN_OK) std::exit(1);
  }
  const auto t1 = Clock::now();
  mulligan_outbox_lease* leases[100];
  for (int done = 0; done < n;) {
    size_t k = 0;
    if (mulligan_outbox_claim(box, "w", 100, -1.0, leases, &k) != MULLIGAN_OK || k == 0) {
      std::exit(1);
    }
    if (mulligan_outbox_complete_many(box, leases, nullptr, k) != MULLIGAN_OK) std::exit(1);
    for (size_t i = 0; i < k; ++i) mulligan_outbox_lease_destroy(leases[i]);
    done += static_cast<int>(k);
  }
  const auto t2 = Clock::now();
  mulligan_outbox_close(box);
  Remove(path);
  return {n / Seconds(t0, t1), n / Seconds(t1, t2)};
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  int n = 2000;
  int reps = 5;
  std::string dir = "/tmp";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--entries") == 0) {
      n = std::atoi(argv[i + 1]);
    } else if (std::strcmp(argv[i], "--reps") == 0) {
      reps = std::atoi(argv[i + 1]);
    } else if (std::strcmp(argv[i], "--dir") == 0) {
      dir = argv[i + 1];
    } else {
      std::fprintf(stderr, "usage: %s [--entries N] [--reps R] [--dir DIR]\n", argv[0]);
      return 2;
    }
  }
  if (n < 100 || reps < 1) {
    std::fprintf(stderr, "--entries must be >= 100 and --reps >= 1, got %d and %d\n", n, reps);
    return 2;
  }
  const std::string path = dir + "/capi_outbox_bench-" + std::to_string(getpid()) + ".db";
  std::printf("%-7s %-8s %12s %12s %7s\n", "sync", "phase", "C++ /s", "C ABI /s", "C/C++");
  for (int sync : {MULLIGAN_OUTBOX_SYNC_FULL, MULLIGAN_OUTBOX_SYNC_NORMAL}) {
    std::vector<double> cxx_enqueue, cxx_deliver, c_enqueue, c_deliver;
    for (int r = 0; r < reps; ++r) {
      const Rates cxx = RunCxx(path, static_cast<mulligan::OutboxSync>(sync), n);
      const Rates c = RunC(path, sync, n);
      cxx_enqueue.push_back(cxx.enqueue);
      cxx_deliver.push_back(cxx.deliver);
      c_enqueue.push_back(c.enqueue);
      c_deliver.push_back(c.deliver);
    }
    const char* name = sync == MULLIGAN_OUTBOX_SYNC_FULL ? "full" : "normal";
    const double ce = Median(cxx_enqueue), cd = Median(cxx_deliver);
    const double e = Median(c_enqueue), d = Median(c_deliver);
    std::printf("%-7s %-8s %12.0f %12.0f %7.2f\n", name, "enqueue", ce, e, e / ce);
    std::printf("%-7s %-8s %12.0f %12.0f %7.2f\n", name, "deliver", cd, d, d / cd);
  }
  return 0;
}
