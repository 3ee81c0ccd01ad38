// idempotency_bench — throughput and memory of the IdempotencyStore.
//
// A standalone program (no benchmark library): prints reserve+complete pairs
// per second and replays per second on 1 and 2 threads, and the bytes one
// entry costs beyond its stored body (measured with glibc's mallinfo2, and as
// the store accounts it). Keys are 36-character UUID-like strings, the
// fingerprint 32 bytes (a SHA-256), the body 100 bytes, one header field.
//
//   c++ -O2 -std=c++17 -Icore/include bench/idempotency_bench.cc
//       core/src/{idempotency_store,clock,status}.cc -pthread   (one line)
// or build the idempotency_bench target of bench/CMakeLists.txt.
#include <malloc.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "mulligan/idempotency/store.h"

namespace {

using mulligan::IdempotencyStore;
using mulligan::IdempotencyStoreOptions;
using mulligan::ReserveState;
using mulligan::StoredResponse;
using mulligan::TimePoint;
using Clock = std::chrono::steady_clock;

const std::string kFingerprint(32, 'f');
const std::string kBody(100, 'b');

std::string Key(int thread, long i) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "3f1c9a2e-%04d-4000-8000-%012ld", thread, i);
  return buf;
}

StoredResponse Response() {
  StoredResponse r;
  r.status = 201;
  r.headers = {{"content-type", "application/json"}};
  r.body = kBody;
  return r;
}

std::unique_ptr<IdempotencyStore> MakeStore(size_t max_entries) {
  IdempotencyStoreOptions options;
  options.max_entries = max_entries;
  options.max_bytes = size_t{4} << 30;
  return IdempotencyStore::Create(options).value();
}

// Runs body(thread index) on `threads` threads; returns the seconds taken.
template <typename Body>
double Run(int threads, Body body) {
  const auto start = Clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(body, t);
  for (std::thread& t : pool) t.join();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void ReserveComplete(int threads) {
  constexpr long kPerThread = 500000;
  auto store = MakeStore(100000);  // bounded: most pairs also evict one entry
  std::vector<std::vector<std::string>> keys(threads);
  for (int t = 0; t < threads; ++t) {
    for (long i = 0; i < kPerThread; ++i) keys[t].push_back(Key(t, i));
  }
  const TimePoint now = Clock::now();
  const double seconds = Run(threads, [&](int t) {
    for (const std::string& key : keys[t]) {
      auto r = store->Reserve("", key, kFingerprint, now);
      if (!r.ok() || r->state != ReserveState::kReserved) std::abort();
      if (!store->Complete(r->lease, Response(), now).ok()) std::abort();
    }
  });
  const double ops = threads * kPerThread / seconds;
  std::printf("reserve+complete  %d thread%s  %10.0f pairs/s  (%.0f ns per pair per thread)\n",
              threads, threads == 1 ? " " : "s", ops, 1e9 * threads / ops);
}

void Replay(int threads) {
  constexpr long kKeys = 10000;
  constexpr long kPerThread = 4000000;
  auto store = MakeStore(100000);
  std::vector<std::string> keys;
  const TimePoint now = Clock::now();
  for (long i = 0; i < kKeys; ++i) {
    keys.push_back(Key(99, i));
    auto r = store->Reserve("user-1", keys.back(), kFingerprint, now);
    if (!store->Complete(r->lease, Response(), now).ok()) std::abort();
  }
  const double seconds = Run(threads, [&](int t) {
    long replays = 0;
    for (long i = 0; i < kPerThread; ++i) {
      auto r = store->Reserve("user-1", keys[(i * 7 + t) % kKeys], kFingerprint, now);
      replays += r.ok() && r->state == ReserveState::kReplay && r->response->body.size() == 100;
    }
    if (replays != kPerThread) std::abort();
  });
  const double ops = threads * kPerThread / seconds;
  std::printf("replay            %d thread%s  %10.0f replays/s (%.0f ns per replay per thread)\n",
              threads, threads == 1 ? " " : "s", ops, 1e9 * threads / ops);
}

void BytesPerEntry() {
  constexpr long kEntries = 200000;
  const size_t before = mallinfo2().uordblks;
  auto store = MakeStore(kEntries);
  const TimePoint now = Clock::now();
  for (long i = 0; i < kEntries; ++i) {
    auto r = store->Reserve("", Key(7, i), kFingerprint, now);
    if (!store->Complete(r->lease, Response(), now).ok()) std::abort();
  }
  const size_t after = mallinfo2().uordblks;
  const double measured = static_cast<double>(after - before) / kEntries;
  const double accounted = static_cast<double>(store->Stats().bytes) / kEntries;
  std::printf(
      "bytes per entry beyond the %zu-byte body: %.0f measured (malloc), %.0f accounted by the "
      "store\n  (36-byte key, 32-byte fingerprint, one 30-byte header field included)\n",
      kBody.size(), measured - static_cast<double>(kBody.size()),
      accounted - static_cast<double>(kBody.size()));
}

}  // namespace

int main() {
  std::printf("hardware threads: %u\n", std::thread::hardware_concurrency());
  ReserveComplete(1);
  ReserveComplete(2);
  Replay(1);
  Replay(2);
  BytesPerEntry();
  return 0;
}
