// mulligan/budget/budget.h — retry budgets: how many retries a client may
// make, shared by every call that names the same budget (DESIGN.md section 5,
// "Retry budget"). (Added in 0.3.)
//
// Three kinds, each the arithmetic of a peer:
//   kTokenBucket  gRPC A6 retryThrottling (grpc/proposal A6-client-retries.md):
//                 tokens start at max_tokens; a failed attempt takes 1 token,
//                 a success adds token_ratio, both clamped to [0, max_tokens];
//                 a retry is allowed only while tokens > max_tokens / 2. As
//                 A6 asks (token_ratio keeps 3 decimal places) and as
//                 grpc-core and grpc-java do, the count is kept in fixed-point
//                 milli-tokens, so 0.1 is exactly 100 and no float drifts.
//   kQuota        the AWS SDKs' standard-mode retry quota (2020 "standard"
//                 retry mode, the default of botocore >= 1.15, the Java SDK
//                 v2, aws-sdk-js-v3 and aws-sdk-go-v2): capacity 500; a retry
//                 takes retry_cost (5), a retry after a timeout takes
//                 timeout_cost (10), after a throttling answer throttling_cost
//                 (5, the retry cost); a retry is refused when the capacity
//                 left is below its cost; a call that succeeds refunds what its
//                 last retry took, or, when it needed no retry,
//                 no_retry_increment (1); never above capacity. The 2026
//                 revision (opt-in through AWS_NEW_RETRIES_2026) charges 14 per
//                 retry and 5 per throttling retry: give retry_cost 14,
//                 timeout_cost 14, throttling_cost 5 to get it.
//   kRatio        Finagle's RetryBudget (com.twitter.finagle.service.
//                 RetryBudget, as Envoy's retry_budget and linkerd's): every
//                 logical call deposits 1, every retry withdraws 1 / percent;
//                 deposits expire after ttl (a sliding window of 10 slices);
//                 a floor of min_retries_per_second * ttl retries is always
//                 available (Finagle's "reserve"). Defaults: ttl 10 s,
//                 percent 0.2, min_retries_per_second 10 (Finagle's).
//
// The first attempt of a call is never refused by a budget: only retries
// (and hedges) ask it. A refused retry keeps the call's last failure as its
// error, with StopReason::kBudget.
//
// Hot path (DESIGN.md section 2): successes are not applied one by one. A
// success is one relaxed increment of a sharded counter (a cache line per
// shard, a shard per thread); the budget folds the pending successes in
// when it is next asked (a retry, a failure, Tokens()). The approximation:
// successes pending since the last fold are applied BEFORE the failure that
// triggers the fold, which can differ from the true order only at the
// clamps (a success that arrived when the bucket was full and before a
// failure is then kept, where the exact order would have lost it; the
// difference is at most token_ratio per fold). For kRatio, deposits folded
// late are dated at the fold; when more than ttl passed since the previous
// fold, only the share ttl / elapsed of them is credited (they are taken as
// spread evenly over the elapsed time), so a long quiet period never buys a
// burst of retries.
//
// Thread-safety: every method may be called from any number of threads at
// once. kTokenBucket and kQuota are lock-free (one atomic word, CAS loops);
// kRatio's window is lock-free except when a slice rolls over (a mutex held
// for a few stores, once per slice length).

#ifndef MULLIGAN_BUDGET_BUDGET_H_
#define MULLIGAN_BUDGET_BUDGET_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "mulligan/base/clock.h"
#include "mulligan/base/status.h"

namespace mulligan {
inline namespace v0 {

// Which arithmetic a RetryBudget follows (see the file comment). (Added in 0.3.)
enum class BudgetKind : int { kTokenBucket = 0, kQuota = 1, kRatio = 2 };

// Returns "token_bucket", "quota" or "ratio".
const char* BudgetKindName(BudgetKind kind);

// What a failed attempt was, for kQuota's costs. (Added in 0.3.)
enum class BudgetFailure : int {
  // Any other retryable failure (a 500, a refused connection).
  kOther = 0,
  // The attempt timed out (an attempt timeout, a transport timeout).
  kTimeout = 1,
  // The dependency said it was overloaded: HTTP 429, or 503 (RFC 9110
  // 15.6.4), gRPC RESOURCE_EXHAUSTED.
  kThrottling = 2,
};

// gRPC A6: 0 < max_tokens <= 1000, token_ratio > 0 (3 decimals kept).
struct TokenBucketOptions {
  double max_tokens = 100.0;
  double token_ratio = 0.5;
};

// AWS standard mode (2020). Every cost >= 0, capacity > 0.
struct QuotaOptions {
  int64_t capacity = 500;
  int64_t retry_cost = 5;
  int64_t timeout_cost = 10;
  int64_t throttling_cost = 5;
  int64_t no_retry_increment = 1;
};

// Finagle. ttl in [1 s, 60 s] (Finagle's bounds); 0 <= percent <= 1;
// min_retries_per_second >= 0.
struct RatioOptions {
  Duration ttl = std::chrono::seconds(10);
  double percent = 0.2;
  double min_retries_per_second = 10.0;
};

// Plain options; validated by RetryBudget::Create. (Added in 0.3.)
struct BudgetOptions {
  // The name it is shared and reported under (metrics: mulligan_budget_*).
  // May be empty for a private budget.
  std::string name;
  BudgetKind kind = BudgetKind::kTokenBucket;
  TokenBucketOptions token_bucket;
  QuotaOptions quota;
  RatioOptions ratio;
  // Dates the budget's creation (kRatio's first fold credits successes as
  // spread since then); null means SystemClock::Default(). Only read by
  // Create. REQUIRES: outlives the call to Create.
  Clock* clock = nullptr;
};

// Validates `options`; kInvalidArgument names the field
// ("budget 'x': token_bucket.token_ratio must be > 0, got -1").
Status ValidateBudgetOptions(const BudgetOptions& options);

namespace internal {

// Successes counted without touching the budget's word: a relaxed increment
// of the calling thread's shard. Drain sums and zeroes every shard.
class ShardedCounter {
 public:
  static constexpr int kShards = 16;
  void Add(uint64_t n = 1);
  uint64_t Drain();
  uint64_t Peek() const;

 private:
  struct alignas(64) Shard {
    std::atomic<uint64_t> value{0};
  };
  std::array<Shard, kShards> shards_;
};

// A sum over a sliding window of `slices` slices (Finagle's WindowedAdder).
// Slice i covers [i * slice, (i + 1) * slice) from the clock's epoch; Sum at
// `now` adds the slices whose index is within (current - slices, current].
class WindowedCounter {
 public:
  static constexpr int kSlices = 10;
  explicit WindowedCounter(Duration window);
  void Add(TimePoint now, int64_t amount);
  int64_t Sum(TimePoint now) const;
  Duration window() const { return window_; }

 private:
  int64_t SliceIndex(TimePoint now) const;
  struct alignas(64) Slice {
    std::atomic<int64_t> epoch{INT64_MIN};
    std::atomic<int64_t> value{0};
  };
  Duration window_;
  int64_t slice_ns_;
  std::array<Slice, kSlices> slices_;
  std::mutex roll_mu_;
};

}  // namespace internal

// A retry budget. Made by Create (private) or Shared (one per name in the
// process); held by shared_ptr by every pipeline and client using it.
// Not copyable or movable.
class RetryBudget {
 public:
  // Validates and builds a budget. kInvalidArgument names the bad field.
  static Result<std::shared_ptr<RetryBudget>> Create(const BudgetOptions& options);
  // The process-wide budget named options.name, made on first use with
  // `options`; later calls return the same budget (their options are then
  // ignored unless the first one failed validation). options.name must not
  // be empty.
  static Result<std::shared_ptr<RetryBudget>> Shared(const BudgetOptions& options);
  // Forgets every shared budget (tests); budgets still held stay usable.
  static void ClearShared();

  RetryBudget(const RetryBudget&) = delete;
  RetryBudget& operator=(const RetryBudget&) = delete;

  // A logical call began (kRatio deposits; the others ignore it).
  void OnCallStarted(TimePoint now);
  // `n` successes that needed no retry (a first attempt that succeeded),
  // counted lazily: the hot-path entry, a relaxed increment. For kRatio each
  // is also a call's deposit (the call never entered the engine otherwise).
  void AddSuccesses(uint64_t n = 1) { pending_.Add(n); }
  // A call succeeded after `cost` was taken by its last retry (kQuota
  // refunds it; kTokenBucket adds token_ratio; kRatio does nothing).
  void OnRetriedSuccess(int64_t cost);
  // An attempt failed with a retryable failure of `kind` (kTokenBucket takes
  // 1 token; the others ignore it: they charge at the retry).
  void OnFailure(BudgetFailure kind, TimePoint now);
  // Asks for one retry after a failure of `kind`. Returns the cost taken
  // (>= 1 milli-unit for kTokenBucket and kRatio, the quota cost for kQuota)
  // or -1 when the budget refuses. Folds pending successes first.
  int64_t TryRetry(BudgetFailure kind, TimePoint now);

  // The room left, in the kind's unit: tokens (kTokenBucket, 3 decimals),
  // capacity (kQuota), retries available now (kRatio, may be fractional).
  // Folds pending successes first. This is the "tokens" gauge.
  double Tokens(TimePoint now);
  // Retries refused so far.
  uint64_t refused() const { return refused_.load(std::memory_order_relaxed); }
  // Retries allowed so far.
  uint64_t allowed() const { return allowed_.load(std::memory_order_relaxed); }

  const BudgetOptions& options() const { return options_; }
  const std::string& name() const { return options_.name; }
  BudgetKind kind() const { return options_.kind; }

 private:
  explicit RetryBudget(const BudgetOptions& options);
  void Fold(TimePoint now);
  void AddClamped(int64_t delta);

  BudgetOptions options_;
  // kTokenBucket: milli-tokens; kQuota: capacity units.
  alignas(64) std::atomic<int64_t> level_{0};
  int64_t max_level_ = 0;
  int64_t ratio_milli_ = 0;       // kTokenBucket: token_ratio * 1000
  int64_t withdrawal_ = 0;        // kRatio: 1000 / percent (Finagle's scale)
  int64_t reserve_ = 0;           // kRatio: min_retries_per_second * ttl * withdrawal
  std::unique_ptr<internal::WindowedCounter> window_;  // kRatio
  std::atomic<int64_t> last_fold_ns_{INT64_MIN};      // kRatio
  internal::ShardedCounter pending_;
  std::atomic<uint64_t> refused_{0};
  std::atomic<uint64_t> allowed_{0};
};

}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_BUDGET_BUDGET_H_
