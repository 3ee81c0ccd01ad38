// mulligan/limits/bulkhead.h — at most N calls in flight per name, with an
// optional bounded FIFO wait queue (DESIGN.md sections 2 and 5, "Bulkhead";
// the pattern of resilience4j's SemaphoreBulkhead and Polly's concurrency
// limiter, with urllib3's pool_block=True queueing).
//
//   auto bulkhead = mulligan::Bulkhead::Create({.name = "db", .max_concurrent = 8});
//   if ((*bulkhead)->TryAcquire()) { RunIt(); (*bulkhead)->Release(); }
//
// The bulkhead never sleeps and never starts a thread. A caller that may
// wait joins the queue with Enqueue() and receives a ticket; the slot that a
// Release() frees goes to the OLDEST ticket (FIFO hand-off: the slot moves
// from the releasing caller to the waiter without ever being free, so a newly
// arriving caller cannot overtake the queue). A waiter then blocks on its
// ticket (sync front doors: BulkheadTicket::WaitFor), or is told through the
// ticket's grant callback (asyncio: loop.call_soon_threadsafe resolves a
// future; libcurl: a re-admit), and a waiter that gives up (timeout,
// cancellation) calls Cancel(), which frees its place, or, when the slot
// reached it at that very moment, passes the slot on to the next waiter.
//
// Inside a pipeline (PipelineOptions::bulkhead) this is strategy 2: the slot
// is taken before the first attempt and held for the whole logical call, all
// its attempts and the waits between them, by default (so a retry storm
// cannot exceed N in flight either); bulkhead_per_attempt holds it for each
// attempt only. A refusal is StopReason::kBulkheadFull, never retried.
//
// Cost: uncontended TryAcquire and Release are each one atomic load and one
// compare-and-swap on the cache line of the shard of the CPU the caller runs
// on (0.6: per-CPU spare permits, so two threads running at once on two
// cores do not bounce one counter's line between them; on other systems
// than Linux a shard per thread, assigned round-robin). The mutex is taken only when the
// spares must be revoked (the pool is empty, a slot is released on a shard
// that holds none, or a caller queues), and while the bulkhead is full or
// waiters exist every call takes the single global count, as before 0.6;
// bulkheads of more than 2^20 - 1 slots always do. See bulkhead.cc for the
// permit accounting and why the bound, FIFO order and refusals stay exact.
//
// (Added in 0.3.)

#ifndef MULLIGAN_LIMITS_BULKHEAD_H_
#define MULLIGAN_LIMITS_BULKHEAD_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "mulligan/base/clock.h"
#include "mulligan/base/status.h"
#include "mulligan/telemetry/histogram.h"

namespace mulligan {
inline namespace v0 {

// Plain options; validated by Bulkhead::Create. (Added in 0.3.)
struct BulkheadOptions {
  // The name in metrics and error texts ("bulkhead 'db' is full"). Printable
  // ASCII, at most 200 bytes; may be empty.
  std::string name;
  // The most calls in flight at once. Must be >= 1 (REQUIRED: the default 0
  // is refused).
  int max_concurrent = 0;
  // The most callers waiting for a slot, in FIFO order; 0 (the default)
  // means no queue: a full bulkhead refuses at once. Must be >= 0.
  int max_queue = 0;
  // The longest a caller waits in the queue, itself bounded by the call's
  // deadline; nullopt (the default) means only the deadline bounds it (a
  // call with neither waits until a slot frees). Must be >= 0 when set; zero
  // means a queued caller is refused unless the slot is free at once.
  std::optional<Duration> max_wait;
};

class Bulkhead;

// One caller's place in a bulkhead's wait queue. Returned by
// Bulkhead::Enqueue; shared between the waiter and the bulkhead.
//
// Thread-safety: every method is thread-safe (the bulkhead grants from the
// releasing thread while the waiter waits or cancels on its own).
class BulkheadTicket {
 public:
  enum class State : int { kWaiting = 0, kGranted = 1, kCancelled = 2 };

  // True once a slot was handed to this ticket (the holder must Release it,
  // through the bulkhead, when done), and not cancelled since.
  bool granted() const { return state_.load(std::memory_order_acquire) == State::kGranted; }
  State state() const { return state_.load(std::memory_order_acquire); }

  // Blocks the calling thread until the slot is granted or `timeout` passes
  // (measured on the steady clock); returns granted(). A negative timeout
  // waits zero. Does not cancel on timeout: call Cancel() to leave.
  bool WaitFor(Duration timeout);

  // Leaves the queue: frees this place (the next caller may queue). When the
  // slot had already been granted (the release raced with the give-up), the
  // slot goes on to the next waiter, or back to the bulkhead, so it is never
  // lost. Afterwards state() is kCancelled. Idempotent.
  void Cancel();

  // Sets the function called once when the slot is granted: on the thread
  // that released the slot, with no lock of the bulkhead held. If the slot
  // was granted already, calls it at once on this thread. Used by
  // event-loop front doors (asyncio, libcurl) to be woken without blocking.
  // `on_grant` must not throw and must not block.
  void SetOnGrant(std::function<void()> on_grant);

 private:
  friend class Bulkhead;
  explicit BulkheadTicket(std::shared_ptr<Bulkhead> owner) : owner_(std::move(owner)) {}

  std::shared_ptr<Bulkhead> owner_;
  std::atomic<State> state_{State::kWaiting};
  // Guarded by owner_->mu_.
  std::function<void()> on_grant_;
  std::condition_variable granted_cv_;
};

// The bulkhead itself. Always owned by a shared_ptr (tickets keep it alive).
//
// Thread-safety: every method is thread-safe and lock-free when uncontended.
class Bulkhead : public std::enable_shared_from_this<Bulkhead> {
 public:
  // Validates `options`; kInvalidArgument names the bad field
  // ("max_concurrent must be >= 1, got 0").
  static Result<std::shared_ptr<Bulkhead>> Create(const BulkheadOptions& options);
  // Returns the status Create would return for `options` (OK when valid).
  static Status Validate(const BulkheadOptions& options);

  Bulkhead(const Bulkhead&) = delete;
  Bulkhead& operator=(const Bulkhead&) = delete;
  ~Bulkhead();

  // Takes a slot if one is free and nobody is queued (the queue goes first:
  // FIFO). True: the caller holds a slot and must Release() it once.
  bool TryAcquire();

  // Frees a slot the caller holds: hands it to the oldest waiter if there is
  // one (its ticket becomes granted and its callback runs on this thread),
  // else returns it to the pool. Returns false, changing nothing, when no
  // slot is held at all (a release without an acquire: the count never goes
  // below zero, so a stray release cannot admit one call too many).
  bool Release();

  // Joins the wait queue. Returns a ticket that may already be granted (a
  // slot freed meanwhile), or null when the queue is full (or the bulkhead
  // has no queue): the caller is refused (kBulkheadFull).
  std::shared_ptr<BulkheadTicket> Enqueue();

  // The kBulkheadFull status of a refusal ("bulkhead 'db' is full: 8 calls
  // in flight, 4 queued").
  Status FullStatus() const;

  const BulkheadOptions& options() const { return options_; }
  const std::string& name() const { return options_.name; }
  // Slots held now (granted tickets included), in [0, max_concurrent]: the
  // permits handed out of the pool less the spares cached on the shards. A
  // snapshot: under concurrent calls it is read shard by shard, not at one
  // instant (exact when no call runs). (Since 0.6 computed, not one load.)
  int in_flight() const;
  // Callers waiting now, in [0, max_queue].
  int queued() const { return waiting_.load(std::memory_order_relaxed); }
  // Refusals since construction: the bulkhead and queue were full, or a
  // waiter gave up (timed out or cancelled) before a slot reached it.
  uint64_t rejected_full() const { return rejected_full_.load(std::memory_order_relaxed); }
  uint64_t rejected_timeout() const { return rejected_timeout_.load(std::memory_order_relaxed); }
  // Total callers that waited in the queue, and their summed wait (from
  // Enqueue to grant, measured on the steady clock), in nanoseconds.
  uint64_t waits() const { return waits_.load(std::memory_order_relaxed); }
  uint64_t wait_ns() const { return wait_ns_.load(std::memory_order_relaxed); }
  // The same waits as a histogram in seconds (metrics'
  // mulligan_bulkhead_queue_wait_seconds). (Added in 0.4.)
  HistogramSnapshot wait_histogram() const { return wait_histogram_.Snapshot(); }
  // Count a refusal made without Enqueue (no queue, no time left to wait),
  // and a waiter refused on its wait deadline (the pipeline's, or a front
  // door's). Enqueue counts its own "queue full" refusals.
  void CountFull() { rejected_full_.fetch_add(1, std::memory_order_relaxed); }
  void CountTimeout() { rejected_timeout_.fetch_add(1, std::memory_order_relaxed); }

 private:
  friend class BulkheadTicket;
  struct Waiter {
    std::shared_ptr<BulkheadTicket> ticket;
    std::chrono::steady_clock::time_point since;
  };
  // One shard's spare permits and the slots held through it, in one word
  // (layout in bulkhead.cc), alone on its 64-byte cache line. (Added in 0.6.)
  struct alignas(64) Shard {
    std::atomic<uint64_t> word{0};
    // Lock-free releases on the global count seen by this shard's threads
    // since the spares were revoked (when to try reopening them).
    std::atomic<uint32_t> global_releases{0};
  };
  static constexpr int kShards = 8;

  explicit Bulkhead(const BulkheadOptions& options);
  // Grants the oldest waiter (under mu_); returns its callback to run after
  // the lock is dropped, via `out`. False when the queue is empty.
  bool GrantOldestLocked(std::function<void()>& out);
  void CancelTicket(BulkheadTicket& ticket);
  // The slow paths and the revocation of spares (bulkhead.cc).
  bool TakeFromPool(Shard& own);
  bool StealSpare();
  bool StealHeld();
  bool AcquireLocked();
  bool ReleaseLocked();
  void RevokeLocked();
  void MaybeReopen(Shard& own, uint32_t issued_after);

  const BulkheadOptions options_;
  // Whether the shards may ever hold spares (max_concurrent < 2^20).
  const bool sharded_;
  Shard shards_[kShards];
  // The pool (layout in bulkhead.cc): permits issued (slots in use plus
  // spares on the shards), the revocation flag and the shards' epoch.
  alignas(64) std::atomic<uint64_t> pool_{0};
  alignas(64) std::atomic<int> waiting_{0};
  std::atomic<uint64_t> rejected_full_{0};
  std::atomic<uint64_t> rejected_timeout_{0};
  std::atomic<uint64_t> waits_{0};
  std::atomic<uint64_t> wait_ns_{0};
  SecondsHistogram wait_histogram_;
  std::mutex mu_;
  std::deque<Waiter> queue_;  // guarded by mu_
};

}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_LIMITS_BULKHEAD_H_
