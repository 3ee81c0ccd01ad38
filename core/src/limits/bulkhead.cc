// core/src/limits/bulkhead.cc — the bulkhead: a CAS-counted pool of slots
// and, when it is full, a mutex-guarded FIFO queue of tickets.
//
// Why no slot is lost and no waiter is stranded: a waiter increments
// waiting_ (under mu_) before it tries the pool once more; a releaser that
// saw no waiter returns its slot (fetch_sub) and then looks at waiting_
// again. With sequentially consistent atomics, either the releaser sees the
// waiter (and hands the slot over under mu_) or the waiter's compare-and-swap
// sees the returned slot (Dekker's pattern).

#include "mulligan/limits/bulkhead.h"

#include <algorithm>
#include <string>
#include <utility>

#include "internal/ascii.h"

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

Bulkhead::Bulkhead(const BulkheadOptions& options) : options_(options) {}

Bulkhead::~Bulkhead() = default;

bool Bulkhead::TryAcquire() {
  // Waiters go first: a free slot with a queue is being handed over.
  if (waiting_.load() != 0) return false;
  int current = in_flight_.load(std::memory_order_relaxed);
  while (current < options_.max_concurrent) {
    if (in_flight_.compare_exchange_weak(current, current + 1)) return true;
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
  std::function<void()> wake;
  if (waiting_.load() == 0) {
    int held = in_flight_.load();
    do {
      if (held <= 0) return false;  // nothing to release
    } while (!in_flight_.compare_exchange_weak(held, held - 1));
    if (waiting_.load() == 0) return true;
    // A waiter joined while the slot was returned: take it back for the
    // oldest waiter, unless a newcomer or the waiter's own retry took it.
    std::lock_guard<std::mutex> lock(mu_);
    if (queue_.empty()) return true;
    int current = in_flight_.load(std::memory_order_relaxed);
    while (current < options_.max_concurrent) {
      if (in_flight_.compare_exchange_weak(current, current + 1)) {
        GrantOldestLocked(wake);
        break;
      }
    }
  } else {
    if (in_flight_.load() <= 0) return false;  // nothing to release
    std::lock_guard<std::mutex> lock(mu_);
    // The slot moves to the oldest waiter without ever being free.
    if (!GrantOldestLocked(wake)) in_flight_.fetch_sub(1);
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
    // One more try at the pool now that releasers can see this waiter; a
    // slot won here goes to the oldest waiter (perhaps this one).
    int current = in_flight_.load(std::memory_order_relaxed);
    while (current < options_.max_concurrent) {
      if (in_flight_.compare_exchange_weak(current, current + 1)) {
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
    // Granted at the moment its waiter gave up: pass the slot on.
    if (!GrantOldestLocked(wake)) in_flight_.fetch_sub(1);
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
