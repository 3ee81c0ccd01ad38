// core/src/breaker/listeners.cc — adding, removing and notifying the circuit
// breaker's transition and call listeners: copy-on-write lists, called after
// the breaker's mutex is released, never letting an exception escape.
#include <algorithm>
#include <memory>
#include <utility>

#include "breaker/listeners.h"
#include "mulligan/breaker/circuit_breaker.h"
#include "mulligan/telemetry/metrics.h"

namespace mulligan {
inline namespace v0 {

uint64_t CircuitBreaker::AddListener(BreakerListener listener) {
  std::lock_guard<std::mutex> lock(listeners_->mu);
  auto list = std::make_shared<Listeners::List>(*listeners_->list);
  const uint64_t id = listeners_->next_id++;
  list->emplace_back(id, std::move(listener));
  listeners_->list = std::move(list);
  return id;
}

bool CircuitBreaker::RemoveListener(uint64_t id) {
  std::lock_guard<std::mutex> lock(listeners_->mu);
  const Listeners::List& current = *listeners_->list;
  auto it = std::find_if(current.begin(), current.end(),
                         [id](const auto& entry) { return entry.first == id; });
  if (it == current.end()) return false;
  auto list = std::make_shared<Listeners::List>(current);
  list->erase(list->begin() + (it - current.begin()));
  listeners_->list = std::move(list);
  return true;
}

uint64_t CircuitBreaker::AddCallListener(BreakerCallListener listener) {
  std::lock_guard<std::mutex> lock(listeners_->mu);
  auto list = listeners_->calls ? std::make_shared<Listeners::CallList>(*listeners_->calls)
                                : std::make_shared<Listeners::CallList>();
  const uint64_t id = listeners_->next_id++;
  list->emplace_back(id, std::move(listener));
  listeners_->calls = std::move(list);
  has_call_listeners_.store(true, std::memory_order_relaxed);
  return id;
}

bool CircuitBreaker::RemoveCallListener(uint64_t id) {
  std::lock_guard<std::mutex> lock(listeners_->mu);
  if (!listeners_->calls) return false;
  const Listeners::CallList& current = *listeners_->calls;
  auto it = std::find_if(current.begin(), current.end(),
                         [id](const auto& entry) { return entry.first == id; });
  if (it == current.end()) return false;
  auto list = std::make_shared<Listeners::CallList>(current);
  list->erase(list->begin() + (it - current.begin()));
  has_call_listeners_.store(!list->empty(), std::memory_order_relaxed);
  listeners_->calls = std::move(list);
  return true;
}

void CircuitBreaker::NotifyCall(BreakerCallKind kind, BreakerState state, Duration duration,
                                bool stale, TimePoint at) {
  std::shared_ptr<const Listeners::CallList> list;
  {
    std::lock_guard<std::mutex> lock(listeners_->mu);
    list = listeners_->calls;
  }
  if (!list) return;
  BreakerCallEvent event;
  event.name = options_.name;
  event.kind = kind;
  event.state = state;
  event.duration = duration;
  event.stale = stale;
  event.at = at;
  for (const auto& entry : *list) {
    try {
      entry.second(event);
    } catch (...) {
    }
  }
}

void CircuitBreaker::Notify(const Pending& pending) {
  if (!pending) return;
  if (metrics_ != nullptr) metrics_->BreakerTransitioned(pending->from, pending->to, pending->reason);
  std::shared_ptr<const Listeners::List> list;
  {
    std::lock_guard<std::mutex> lock(listeners_->mu);
    list = listeners_->list;
  }
  if (list->empty()) return;
  BreakerTransition transition;
  transition.name = options_.name;
  transition.from = pending->from;
  transition.to = pending->to;
  transition.reason = pending->reason;
  transition.at = pending->at;
  transition.open_until = pending->open_until;
  for (const auto& entry : *list) {
    // A throwing listener must not break the caller's Acquire/Record nor
    // starve the other listeners.
    try {
      entry.second(transition);
    } catch (...) {
    }
  }
}

}  // namespace v0
}  // namespace mulligan
