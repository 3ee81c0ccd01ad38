// core/src/budget/budget.cc — the three retry budgets (budget/budget.h):
// gRPC A6's token bucket, the AWS standard-mode quota and Finagle's ratio.

#include "mulligan/budget/budget.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <utility>

#include "internal/format.h"

namespace mulligan {
inline namespace v0 {

const char* BudgetKindName(BudgetKind kind) {
  switch (kind) {
    case BudgetKind::kTokenBucket: return "token_bucket";
    case BudgetKind::kQuota: return "quota";
    case BudgetKind::kRatio: return "ratio";
  }
  return "unknown";
}

namespace {

Status FieldError(const BudgetOptions& options, const char* field, const std::string& rule,
                  const std::string& got) {
  std::string text = "budget";
  if (!options.name.empty()) text += " '" + options.name + "'";
  text += std::string(": ") + field + " must be " + rule + ", got " + got;
  return InvalidArgumentError(std::move(text));
}

std::string Number(double value) { return internal::FormatDouble(value); }

Status ValidateQuota(const BudgetOptions& options) {
  const QuotaOptions& q = options.quota;
  if (q.capacity <= 0) {
    return FieldError(options, "quota.capacity", "> 0", std::to_string(q.capacity));
  }
  const std::pair<const char*, int64_t> costs[] = {
      {"quota.retry_cost", q.retry_cost},
      {"quota.timeout_cost", q.timeout_cost},
      {"quota.throttling_cost", q.throttling_cost},
      {"quota.no_retry_increment", q.no_retry_increment},
  };
  for (const auto& [field, value] : costs) {
    if (value < 0) return FieldError(options, field, ">= 0", std::to_string(value));
  }
  return OkStatus();
}

// A6: "additional decimal places are ignored": truncation, with a guard for
// binary fractions just below a milli (0.3 * 1000 = 299.99999999999997).
int64_t ToMilli(double value) {
  return static_cast<int64_t>(std::floor(value * 1000.0 + 1e-6));
}

}  // namespace

Status ValidateBudgetOptions(const BudgetOptions& options) {
  switch (options.kind) {
    case BudgetKind::kTokenBucket: {
      const TokenBucketOptions& t = options.token_bucket;
      if (!(t.max_tokens > 0.0) || t.max_tokens > 1000.0) {
        return FieldError(options, "token_bucket.max_tokens", "in (0, 1000] (gRPC A6)",
                          Number(t.max_tokens));
      }
      if (!(t.token_ratio > 0.0) || !std::isfinite(t.token_ratio) || ToMilli(t.token_ratio) < 1) {
        return FieldError(options, "token_bucket.token_ratio",
                          ">= 0.001 (gRPC A6 keeps 3 decimal places)", Number(t.token_ratio));
      }
      if (ToMilli(t.max_tokens) < 1) {
        return FieldError(options, "token_bucket.max_tokens", ">= 0.001", Number(t.max_tokens));
      }
      return OkStatus();
    }
    case BudgetKind::kQuota:
      return ValidateQuota(options);
    case BudgetKind::kRatio: {
      const RatioOptions& r = options.ratio;
      if (r.ttl < std::chrono::seconds(1) || r.ttl > std::chrono::seconds(60)) {
        return FieldError(options, "ratio.ttl", "in [1 s, 60 s] (Finagle's bounds)",
                          Number(std::chrono::duration<double>(r.ttl).count()) + " s");
      }
      if (!(r.percent >= 0.0) || r.percent > 1.0) {
        return FieldError(options, "ratio.percent", "in [0, 1]", Number(r.percent));
      }
      if (!(r.min_retries_per_second >= 0.0) || !std::isfinite(r.min_retries_per_second)) {
        return FieldError(options, "ratio.min_retries_per_second", ">= 0 and finite",
                          Number(r.min_retries_per_second));
      }
      return OkStatus();
    }
  }
  return InvalidArgumentError("budget: unknown kind " +
                              std::to_string(static_cast<int>(options.kind)));
}

// ---------------------------------------------------------------------------
// Counters

namespace internal {

namespace {
std::atomic<unsigned> next_shard{0};
unsigned ThreadShard() {
  thread_local const unsigned shard =
      next_shard.fetch_add(1, std::memory_order_relaxed) % ShardedCounter::kShards;
  return shard;
}
}  // namespace

void ShardedCounter::Add(uint64_t n) {
  shards_[ThreadShard()].value.fetch_add(n, std::memory_order_relaxed);
}

uint64_t ShardedCounter::Drain() {
  uint64_t total = 0;
  for (Shard& shard : shards_) {
    if (shard.value.load(std::memory_order_relaxed) != 0) {
      total += shard.value.exchange(0, std::memory_order_relaxed);
    }
  }
  return total;
}

uint64_t ShardedCounter::Peek() const {
  uint64_t total = 0;
  for (const Shard& shard : shards_) total += shard.value.load(std::memory_order_relaxed);
  return total;
}

WindowedCounter::WindowedCounter(Duration window)
    : window_(window), slice_ns_(std::max<int64_t>(1, window.count() / kSlices)) {}

int64_t WindowedCounter::SliceIndex(TimePoint now) const {
  const int64_t ns = now.time_since_epoch().count();
  int64_t index = ns / slice_ns_;
  if (ns % slice_ns_ != 0 && ns < 0) --index;  // floor
  return index;
}

void WindowedCounter::Add(TimePoint now, int64_t amount) {
  const int64_t index = SliceIndex(now);
  Slice& slice = slices_[static_cast<size_t>(((index % kSlices) + kSlices) % kSlices)];
  if (slice.epoch.load(std::memory_order_acquire) != index) {
    std::lock_guard<std::mutex> lock(roll_mu_);
    const int64_t epoch = slice.epoch.load(std::memory_order_relaxed);
    if (epoch > index) return;  // a caller late by a whole window: too old to count
    if (epoch != index) {
      slice.value.store(0, std::memory_order_relaxed);
      slice.epoch.store(index, std::memory_order_release);
    }
  }
  slice.value.fetch_add(amount, std::memory_order_relaxed);
}

int64_t WindowedCounter::Sum(TimePoint now) const {
  const int64_t current = SliceIndex(now);
  int64_t total = 0;
  for (const Slice& slice : slices_) {
    const int64_t epoch = slice.epoch.load(std::memory_order_acquire);
    if (epoch <= current && epoch > current - kSlices) {
      total += slice.value.load(std::memory_order_relaxed);
    }
  }
  return total;
}

}  // namespace internal

// ---------------------------------------------------------------------------
// RetryBudget

namespace {
constexpr int64_t kFinagleScale = 1000;  // Finagle's scaleFactor
}  // namespace

Result<std::shared_ptr<RetryBudget>> RetryBudget::Create(const BudgetOptions& options) {
  Status status = ValidateBudgetOptions(options);
  if (!status.ok()) return status;
  std::shared_ptr<RetryBudget> budget(new RetryBudget(options));
  return budget;
}

namespace {
std::mutex& SharedMutex() {
  static std::mutex mu;
  return mu;
}
std::map<std::string, std::shared_ptr<RetryBudget>, std::less<>>& SharedMap() {
  static auto* map = new std::map<std::string, std::shared_ptr<RetryBudget>, std::less<>>();
  return *map;
}
}  // namespace

Result<std::shared_ptr<RetryBudget>> RetryBudget::Shared(const BudgetOptions& options) {
  if (options.name.empty()) {
    return InvalidArgumentError("budget: name must not be empty for a shared budget");
  }
  std::lock_guard<std::mutex> lock(SharedMutex());
  auto& map = SharedMap();
  auto found = map.find(options.name);
  if (found != map.end()) return found->second;
  Result<std::shared_ptr<RetryBudget>> made = Create(options);
  if (!made.ok()) return made.status();
  map.emplace(options.name, made.value());
  return made;
}

void RetryBudget::ClearShared() {
  std::lock_guard<std::mutex> lock(SharedMutex());
  SharedMap().clear();
}

RetryBudget::RetryBudget(const BudgetOptions& options) : options_(options) {
  options_.clock = nullptr;  // only Create reads it
  Clock* clock = options.clock != nullptr ? options.clock : SystemClock::Default();
  switch (options.kind) {
    case BudgetKind::kTokenBucket:
      max_level_ = ToMilli(options.token_bucket.max_tokens);
      ratio_milli_ = ToMilli(options.token_bucket.token_ratio);
      break;
    case BudgetKind::kQuota:
      max_level_ = options.quota.capacity;
      break;
    case BudgetKind::kRatio: {
      const RatioOptions& r = options.ratio;
      // Finagle: a percent of 0 withdraws more than a deposit, so only the
      // reserve is ever spent.
      withdrawal_ = r.percent == 0.0 ? kFinagleScale + 1
                                     : static_cast<int64_t>(kFinagleScale / r.percent);
      const double ttl_s = std::chrono::duration<double>(r.ttl).count();
      reserve_ = static_cast<int64_t>(r.min_retries_per_second * ttl_s) * withdrawal_;
      window_ = std::make_unique<internal::WindowedCounter>(r.ttl);
      last_fold_ns_.store(clock->Now().time_since_epoch().count(), std::memory_order_relaxed);
      break;
    }
  }
  level_.store(max_level_, std::memory_order_relaxed);
}

void RetryBudget::AddClamped(int64_t delta) {
  int64_t current = level_.load(std::memory_order_relaxed);
  for (;;) {
    int64_t next = current + delta;
    if (delta > 0 && (next > max_level_ || next < current)) next = max_level_;
    if (next < 0) next = 0;
    if (next == current) return;
    if (level_.compare_exchange_weak(current, next, std::memory_order_relaxed)) return;
  }
}

void RetryBudget::Fold(TimePoint now) {
  if (options_.kind == BudgetKind::kRatio) {
    const int64_t now_ns = now.time_since_epoch().count();
    const int64_t last = last_fold_ns_.exchange(now_ns, std::memory_order_relaxed);
    const uint64_t n = pending_.Drain();
    if (n == 0) return;
    const int64_t elapsed = now_ns - last;
    double credit = static_cast<double>(n) * kFinagleScale;
    const int64_t ttl = options_.ratio.ttl.count();
    if (elapsed > ttl) credit *= static_cast<double>(ttl) / static_cast<double>(elapsed);
    window_->Add(now, static_cast<int64_t>(credit));
    return;
  }
  const uint64_t n = pending_.Drain();
  if (n == 0) return;
  const int64_t each =
      options_.kind == BudgetKind::kTokenBucket ? ratio_milli_ : options_.quota.no_retry_increment;
  if (each == 0) return;
  // Saturates: more pending successes than fill the bucket just fill it.
  const uint64_t cap = static_cast<uint64_t>(max_level_ / each) + 1;
  AddClamped(static_cast<int64_t>(std::min(n, cap)) * each);
}

void RetryBudget::OnCallStarted(TimePoint now) {
  if (options_.kind == BudgetKind::kRatio) window_->Add(now, kFinagleScale);
}

void RetryBudget::OnRetriedSuccess(int64_t cost) {
  switch (options_.kind) {
    case BudgetKind::kTokenBucket: AddClamped(ratio_milli_); break;
    case BudgetKind::kQuota: AddClamped(std::max<int64_t>(cost, 0)); break;
    case BudgetKind::kRatio: break;
  }
}

void RetryBudget::OnFailure(BudgetFailure, TimePoint now) {
  if (options_.kind != BudgetKind::kTokenBucket) return;
  Fold(now);
  AddClamped(-1000);
}

int64_t RetryBudget::TryRetry(BudgetFailure kind, TimePoint now) {
  Fold(now);
  int64_t cost = -1;
  switch (options_.kind) {
    case BudgetKind::kTokenBucket: {
      // A6: "retries are allowed only while tokens > max_tokens / 2", in
      // exact integer arithmetic on milli-tokens.
      if (level_.load(std::memory_order_relaxed) * 2 > max_level_) cost = 0;
      break;
    }
    case BudgetKind::kQuota: {
      const QuotaOptions& q = options_.quota;
      const int64_t want = kind == BudgetFailure::kTimeout      ? q.timeout_cost
                           : kind == BudgetFailure::kThrottling ? q.throttling_cost
                                                                : q.retry_cost;
      int64_t current = level_.load(std::memory_order_relaxed);
      while (current >= want) {
        if (level_.compare_exchange_weak(current, current - want, std::memory_order_relaxed)) {
          cost = want;
          break;
        }
      }
      break;
    }
    case BudgetKind::kRatio: {
      // Finagle's tryWithdraw: racy between the check and the withdrawal
      // by design (a few concurrent retries may overdraw by one each).
      if (window_->Sum(now) + reserve_ >= withdrawal_) {
        window_->Add(now, -withdrawal_);
        cost = withdrawal_;
      }
      break;
    }
  }
  if (cost < 0) {
    refused_.fetch_add(1, std::memory_order_relaxed);
  } else {
    allowed_.fetch_add(1, std::memory_order_relaxed);
  }
  return cost;
}

double RetryBudget::Tokens(TimePoint now) {
  Fold(now);
  switch (options_.kind) {
    case BudgetKind::kTokenBucket:
      return static_cast<double>(level_.load(std::memory_order_relaxed)) / 1000.0;
    case BudgetKind::kQuota:
      return static_cast<double>(level_.load(std::memory_order_relaxed));
    case BudgetKind::kRatio:
      return static_cast<double>(window_->Sum(now) + reserve_) / static_cast<double>(withdrawal_);
  }
  return 0.0;
}

}  // namespace v0
}  // namespace mulligan
