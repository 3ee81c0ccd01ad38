// core/src/limits/bulkhead.cc — the bulkhead: a pool of permits, spare
// permits cached on per-CPU shards (0.6), and, when it is full, a
// mutex-guarded FIFO queue of tickets.
//
// Permits (0.6). `pool_` counts the permits ISSUED: slots in use plus spares
// cached on the shards. Each shard's word holds its `spare` permits and the
// slots `held` through it (attributed to it). A thread uses the shard of the CPU
// it runs on (ThisThreadShard). The count that bounds the bulkhead is
//   in flight C = issued - sum(spare)   (held on shards + held globally)
// and no operation lets issued exceed max_concurrent, so C never does either.
//   - TryAcquire takes a spare of its own shard (spare-1, held+1: one CAS on
//     its own cache line); else a permit from the pool (issued+1), attributed
//     to its shard (held+1) when the shards are open in the same epoch; else a
//     spare of another shard; else it REVOKES and tries the pool once more,
//     so it refuses only when all max_concurrent permits are in use.
//   - Release turns a slot held through its own shard into a spare (held-1,
//     spare+1: one CAS); else one held through another shard (the slot was
//     taken on another thread); else it revokes and returns the permit to
//     the pool. A release when C == 0 (nothing held at all) returns false:
//     it can only be told apart after a revocation, where C == issued exactly.
//   - Revocation (under mu_): close every shard (exchange its word for
//     "closed", so no fast path can touch it any more), take its spares back
//     out of issued, its held slots become held globally, and set the pool's
//     closed flag. While closed, every call works on the pool alone, exactly
//     the pre-0.6 algorithm (a CAS-counted count of slots in use).
//   - Reopening (under mu_): when the pool is closed, nobody waits, at most
//     max_concurrent / 2 slots are in use, and a shard's threads made
//     kReopenAfter lock-free releases on the pool since the revocation (so a
//     bulkhead that keeps running full does not flip back and forth), every
//     shard opens empty in a new epoch and then the pool's flag is cleared.
//     While the flag is set the shards stay empty (nothing can add a spare or
//     a held slot to them), so "closed" means C == issued.
//   - An acquire that took a permit from the pool attributes it to its shard
//     by a CAS that expects the shard open in the pool's epoch of that moment:
//     after a revocation (shard closed) or a reopening (new epoch) the slot
//     stays held globally, so it is never counted twice.
//
// Why no slot is lost and no waiter is stranded: Enqueue adds the waiter and
// then revokes before it tries the pool, all under mu_. A release that made
// its slot a spare before the revocation closed its shard had it returned to
// the pool by the revocation (both are read-modify-writes of the shard's one
// word, so one comes first); a release after it finds its shard closed and
// takes the global path. On that path a waiter increments waiting_ (under
// mu_) before it tries the pool once more; a releaser that saw no waiter
// returns its slot and then looks at waiting_ again. With sequentially
// consistent atomics, either the releaser sees the waiter (and hands the slot
// over under mu_) or the waiter's compare-and-swap sees the returned slot
// (Dekker's pattern). Waiters exist only while the pool is closed.

#include "mulligan/limits/bulkhead.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include "internal/ascii.h"

#if defined(__linux__)
#include <sched.h>
#endif
// glibc >= 2.35 registers rseq for every thread and exports where its area is.
#if defined(__linux__) && defined(__GLIBC__) && defined(__has_include)
#if __has_include(<sys/rseq.h>) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35))
#include <sys/rseq.h>
#define MULLIGAN_HAVE_RSEQ 1
#endif
#endif
#ifndef MULLIGAN_HAVE_RSEQ
#define MULLIGAN_HAVE_RSEQ 0
#endif

namespace mulligan {
inline namespace v0 {

Status Bulkhead::Validate(const BulkheadOptions& options) {
  bool printable = options.name.size() <= 200;
  for (char c : options.name) printable = printable && internal::IsPrintableAscii(c);
  if (!printable) {
    return InvalidArgumentError("bulkhead name must be printable ASCII of at most 200 bytes");
  }
  if (options.max_concurrent < 1) {
    return InvalidArgumentError("bulkhead max_concurrent must be >= 1, got " +
                                std::to_string(options.max_concurrent));
  }
  if (options.max_queue < 0) {
    return InvalidArgumentError("bulkhead max_queue must be >= 0, got " +
                                std::to_string(options.max_queue));
  }
  if (options.max_wait && *options.max_wait < Duration::zero()) {
    return InvalidArgumentError("bulkhead max_wait must be >= 0");
  }
  return OkStatus();
}

Result<std::shared_ptr<Bulkhead>> Bulkhead::Create(const BulkheadOptions& options) {
  Status valid = Validate(options);
  if (!valid.ok()) return valid;
  return std::shared_ptr<Bulkhead>(new Bulkhead(options));
}

namespace {

// Shard word: bits 0-19 spare, 20-39 held, 40-62 epoch, 63 closed.
constexpr uint64_t kSpareMask = (uint64_t{1} << 20) - 1;
constexpr int kHeldShift = 20;
constexpr uint64_t kHeldOne = uint64_t{1} << kHeldShift;
constexpr int kShardEpochShift = 40;
constexpr uint64_t kEpochMask = (uint64_t{1} << 23) - 1;
constexpr uint64_t kShardClosed = uint64_t{1} << 63;
// Pool word: bits 0-31 issued, 32-54 epoch, 63 closed.
constexpr uint64_t kIssuedMask = (uint64_t{1} << 32) - 1;
constexpr int kPoolEpochShift = 32;
constexpr uint64_t kPoolClosed = uint64_t{1} << 63;
// The largest bulkhead whose counts fit a shard word's 20-bit fields.
constexpr int kMaxSharded = static_cast<int>(kSpareMask);
// Lock-free releases on the closed pool, seen by one shard's threads, before
// they try to reopen the shards.
constexpr uint32_t kReopenAfter = 64;

uint32_t Spare(uint64_t w) { return static_cast<uint32_t>(w & kSpareMask); }
uint32_t Held(uint64_t w) { return static_cast<uint32_t>((w >> kHeldShift) & kSpareMask); }
bool ShardOpen(uint64_t w) { return (w & kShardClosed) == 0; }
uint64_t ShardEpoch(uint64_t w) { return (w >> kShardEpochShift) & kEpochMask; }
uint32_t Issued(uint64_t p) { return static_cast<uint32_t>(p & kIssuedMask); }
bool PoolClosed(uint64_t p) { return (p & kPoolClosed) != 0; }
uint64_t PoolEpoch(uint64_t p) { return (p >> kPoolEpochShift) & kEpochMask; }

// The calling thread's shard, any unsigned (the caller masks it). On Linux
// the CPU it runs on (the cpu_id the kernel keeps in the thread's rseq area,
// read as glibc >= 2.35's sched_getcpu does: no system call), so two threads running at once on two
// cores never share a shard, however many threads come and go; a thread
// moved to another core between its acquire and release is served by
// StealHeld. Elsewhere a per-thread index assigned once, round-robin. Any
// shard is correct; the choice only decides which cache line is touched.
unsigned ThisThreadShard() {
#if MULLIGAN_HAVE_RSEQ
  // glibc's own rseq registration (the kernel keeps cpu_id current); the
  // same read sched_getcpu makes, inlined. __rseq_size is 0 when glibc did
  // not register (glibc.pthread.rseq=0): then ask sched_getcpu.
  if (__rseq_size > 0) {
    const auto* area = reinterpret_cast<const volatile struct rseq*>(
        static_cast<const char*>(__builtin_thread_pointer()) + __rseq_offset);
    const int32_t cpu = static_cast<int32_t>(area->cpu_id);
    if (cpu >= 0) return static_cast<unsigned>(cpu);
  }
#endif
#if defined(__linux__)
  const int cpu = sched_getcpu();
  if (cpu >= 0) return static_cast<unsigned>(cpu);
#endif
  static std::atomic<unsigned> next{0};
  thread_local const unsigned index = next.fetch_add(1, std::memory_order_relaxed);
  return index;
}

}  // namespace

Bulkhead::Bulkhead(const BulkheadOptions& options)
    : options_(options), sharded_(options.max_concurrent <= kMaxSharded) {
  if (!sharded_) {
    pool_.store(kPoolClosed);
    for (Shard& shard : shards_) shard.word.store(kShardClosed);
  }
}

Bulkhead::~Bulkhead() = default;

int Bulkhead::in_flight() const {
  int64_t count = Issued(pool_.load());
  for (const Shard& shard : shards_) {
    const uint64_t w = shard.word.load(std::memory_order_relaxed);
    if (ShardOpen(w)) count -= Spare(w);
  }
  return static_cast<int>(std::clamp<int64_t>(count, 0, options_.max_concurrent));
}

bool Bulkhead::TryAcquire() {
  Shard& own = shards_[ThisThreadShard() & (kShards - 1)];
  uint64_t w = own.word.load(std::memory_order_relaxed);
  while (ShardOpen(w) && Spare(w) > 0) {
    if (own.word.compare_exchange_weak(w, w - 1 + kHeldOne)) return true;
  }
  // Waiters go first: a free slot with a queue is being handed over.
  if (waiting_.load() != 0) return false;
  if (TakeFromPool(own)) return true;
  // Closed: no spares exist, so all max_concurrent slots are in use.
  if (PoolClosed(pool_.load())) return false;
  if (StealSpare()) return true;
  return AcquireLocked();
}

bool Bulkhead::TakeFromPool(Shard& own) {
  uint64_t p = pool_.load();
  while (Issued(p) < static_cast<uint32_t>(options_.max_concurrent)) {
    if (pool_.compare_exchange_weak(p, p + 1)) {
      if (PoolClosed(p)) return true;  // held globally
      const uint64_t epoch = PoolEpoch(p);
      uint64_t w = own.word.load(std::memory_order_relaxed);
      while (ShardOpen(w) && ShardEpoch(w) == epoch) {
        if (own.word.compare_exchange_weak(w, w + kHeldOne)) break;
      }
      return true;
    }
  }
  return false;
}

bool Bulkhead::StealSpare() {
  for (Shard& shard : shards_) {
    uint64_t w = shard.word.load(std::memory_order_relaxed);
    while (ShardOpen(w) && Spare(w) > 0) {
      if (shard.word.compare_exchange_weak(w, w - 1 + kHeldOne)) return true;
    }
  }
  return false;
}

bool Bulkhead::StealHeld() {
  for (Shard& shard : shards_) {
    uint64_t w = shard.word.load(std::memory_order_relaxed);
    while (ShardOpen(w) && Held(w) > 0) {
      if (shard.word.compare_exchange_weak(w, w - kHeldOne + 1)) return true;
    }
  }
  return false;
}

void Bulkhead::RevokeLocked() {
  uint64_t p = pool_.load();
  if (PoolClosed(p)) return;
  uint32_t spares = 0;
  for (Shard& shard : shards_) {
    spares += Spare(shard.word.exchange(kShardClosed));
    shard.global_releases.store(0, std::memory_order_relaxed);
  }
  // issued >= spares always (spares are issued permits); the clamp only
  // keeps the word's other fields intact whatever happens.
  while (!pool_.compare_exchange_weak(
      p, (p & ~kIssuedMask) | kPoolClosed | (Issued(p) - std::min(spares, Issued(p))))) {
  }
}

void Bulkhead::MaybeReopen(Shard& own, uint32_t issued_after) {
  if (!sharded_) return;
  if (own.global_releases.fetch_add(1, std::memory_order_relaxed) + 1 < kReopenAfter) return;
  const uint32_t half = static_cast<uint32_t>(options_.max_concurrent / 2);
  if (issued_after > half) return;
  std::lock_guard<std::mutex> lock(mu_);
  own.global_releases.store(0, std::memory_order_relaxed);
  uint64_t p = pool_.load();
  if (!queue_.empty() || !PoolClosed(p) || Issued(p) > half) return;
  const uint64_t epoch = (PoolEpoch(p) + 1) & kEpochMask;
  // Open the (empty) shards first, then clear the flag: until then nothing
  // can put a spare or a held slot on them (see the header).
  for (Shard& shard : shards_) shard.word.store(epoch << kShardEpochShift);
  while (!pool_.compare_exchange_weak(p, (p & kIssuedMask) | (epoch << kPoolEpochShift))) {
  }
}

bool Bulkhead::AcquireLocked() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!queue_.empty()) return false;
  RevokeLocked();
  uint64_t p = pool_.load();
  while (Issued(p) < static_cast<uint32_t>(options_.max_concurrent)) {
    if (pool_.compare_exchange_weak(p, p + 1)) return true;
  }
  return false;
}

bool Bulkhead::GrantOldestLocked(std::function<void()>& out) {
  if (queue_.empty()) return false;
  Waiter w = std::move(queue_.front());
  queue_.pop_front();
  waiting_.fetch_sub(1);
  w.ticket->state_.store(BulkheadTicket::State::kGranted, std::memory_order_release);
  out = std::move(w.ticket->on_grant_);
  w.ticket->on_grant_ = nullptr;
  w.ticket->granted_cv_.notify_all();
  const Duration waited =
      std::chrono::duration_cast<Duration>(std::chrono::steady_clock::now() - w.since);
  waits_.fetch_add(1, std::memory_order_relaxed);
  wait_ns_.fetch_add(static_cast<uint64_t>(std::max<int64_t>(0, waited.count())),
                     std::memory_order_relaxed);
  wait_histogram_.Record(waited);
  return true;
}

bool Bulkhead::Release() {
  Shard& own = shards_[ThisThreadShard() & (kShards - 1)];
  uint64_t w = own.word.load(std::memory_order_relaxed);
  while (ShardOpen(w) && Held(w) > 0) {
    if (own.word.compare_exchange_weak(w, w - kHeldOne + 1)) return true;
  }
  uint64_t p = pool_.load();
  if (PoolClosed(p) && waiting_.load() == 0) {
    // The pre-0.6 path: every slot in use is counted by the pool alone.
    do {
      if (Issued(p) == 0) return false;  // nothing to release
      if (!PoolClosed(p)) return ReleaseLocked();  // reopened meanwhile
    } while (!pool_.compare_exchange_weak(p, p - 1));
    if (waiting_.load() == 0) {
      MaybeReopen(own, Issued(p) - 1);
      return true;
    }
    // A waiter joined while the slot was returned: take it back for the
    // oldest waiter, unless a newcomer or the waiter's own retry took it.
    std::function<void()> wake;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (queue_.empty()) return true;
      p = pool_.load();
      while (Issued(p) < static_cast<uint32_t>(options_.max_concurrent)) {
        if (pool_.compare_exchange_weak(p, p + 1)) {
          GrantOldestLocked(wake);
          break;
        }
      }
    }
    if (wake) wake();
    return true;
  }
  // A slot taken on another thread's shard.
  if (ShardOpen(w) && !PoolClosed(p) && StealHeld()) return true;
  return ReleaseLocked();
}

bool Bulkhead::ReleaseLocked() {
  std::function<void()> wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    RevokeLocked();  // now every slot in use is counted by the pool alone
    uint64_t p = pool_.load();
    if (!queue_.empty()) {
      if (Issued(p) == 0) return false;  // nothing to release
      // The slot moves to the oldest waiter without ever being free.
      GrantOldestLocked(wake);
    } else {
      do {
        if (Issued(p) == 0) return false;  // nothing to release
      } while (!pool_.compare_exchange_weak(p, p - 1));
    }
  }
  if (wake) wake();
  return true;
}

std::shared_ptr<BulkheadTicket> Bulkhead::Enqueue() {
  std::function<void()> wake;
  std::shared_ptr<BulkheadTicket> ticket;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (static_cast<int>(queue_.size()) >= options_.max_queue) {
      rejected_full_.fetch_add(1, std::memory_order_relaxed);
      return nullptr;
    }
    ticket.reset(new BulkheadTicket(shared_from_this()));
    queue_.push_back(Waiter{ticket, std::chrono::steady_clock::now()});
    waiting_.fetch_add(1);
    // Spares go back to the pool, and every release from now on sees the
    // closed pool and so this waiter.
    RevokeLocked();
    // One more try at the pool now that releasers can see this waiter; a
    // slot won here goes to the oldest waiter (perhaps this one).
    uint64_t p = pool_.load();
    while (Issued(p) < static_cast<uint32_t>(options_.max_concurrent)) {
      if (pool_.compare_exchange_weak(p, p + 1)) {
        GrantOldestLocked(wake);
        break;
      }
    }
  }
  if (wake) wake();
  return ticket;
}

void Bulkhead::CancelTicket(BulkheadTicket& ticket) {
  std::function<void()> wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const BulkheadTicket::State state = ticket.state_.load(std::memory_order_acquire);
    if (state == BulkheadTicket::State::kCancelled) return;
    ticket.state_.store(BulkheadTicket::State::kCancelled, std::memory_order_release);
    ticket.on_grant_ = nullptr;
    ticket.granted_cv_.notify_all();
    if (state == BulkheadTicket::State::kWaiting) {
      auto it = std::find_if(queue_.begin(), queue_.end(),
                             [&](const Waiter& w) { return w.ticket.get() == &ticket; });
      if (it != queue_.end()) {
        queue_.erase(it);
        waiting_.fetch_sub(1);
      }
      return;
    }
    // Granted at the moment its waiter gave up: pass the slot on, or return
    // it to the pool (counted there alone once the spares are revoked).
    if (!GrantOldestLocked(wake)) {
      RevokeLocked();
      uint64_t p = pool_.load();
      while (Issued(p) > 0 && !pool_.compare_exchange_weak(p, p - 1)) {
      }
    }
  }
  if (wake) wake();
}

Status Bulkhead::FullStatus() const {
  return BulkheadFullError("bulkhead '" + options_.name + "' is full: " +
                           std::to_string(in_flight()) + " of " +
                           std::to_string(options_.max_concurrent) + " in flight, " +
                           std::to_string(queued()) + " of " +
                           std::to_string(options_.max_queue) + " queued");
}

bool BulkheadTicket::WaitFor(Duration timeout) {
  if (granted()) return true;
  std::unique_lock<std::mutex> lock(owner_->mu_);
  auto done = [&] { return state_.load() != State::kWaiting; };
  if (timeout >= std::chrono::hours(24 * 365)) {
    // Effectively unbounded: wait_for would overflow the steady clock.
    granted_cv_.wait(lock, done);
  } else {
    granted_cv_.wait_for(lock, std::max(timeout, Duration::zero()), done);
  }
  return state_.load() == State::kGranted;
}

void BulkheadTicket::Cancel() { owner_->CancelTicket(*this); }

void BulkheadTicket::SetOnGrant(std::function<void()> on_grant) {
  {
    std::lock_guard<std::mutex> lock(owner_->mu_);
    if (state_.load() == State::kWaiting) {
      on_grant_ = std::move(on_grant);
      return;
    }
    if (state_.load() != State::kGranted) return;
  }
  if (on_grant) on_grant();
}

}  // namespace v0
}  // namespace mulligan
