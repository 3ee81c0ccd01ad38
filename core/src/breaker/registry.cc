// The breaker registry: a hash map over an LRU list, one mutex.
#include "mulligan/breaker/registry.h"

#include <algorithm>
#include <string>
#include <utility>

namespace mulligan {
inline namespace v0 {

// Registry-wide listeners in a copy-on-write list. Each breaker holds a
// shared_ptr to the hub through its forwarding listener, so the hub lives as
// long as the registry or any breaker it created.
struct BreakerRegistry::Hub {
  using List = std::vector<std::pair<uint64_t, BreakerListener>>;
  std::mutex mu;
  std::shared_ptr<const List> list = std::make_shared<const List>();
  uint64_t next_id = 1;

  void Forward(const BreakerTransition& transition) {
    std::shared_ptr<const List> snapshot;
    {
      std::lock_guard<std::mutex> lock(mu);
      snapshot = list;
    }
    for (const auto& entry : *snapshot) entry.second(transition);
  }
};

Result<std::unique_ptr<BreakerRegistry>> BreakerRegistry::Create(
    const BreakerRegistryOptions& options) {
  if (options.max_breakers < 1) {
    return InvalidArgumentError("max_breakers must be >= 1, got 0");
  }
  Status status = CircuitBreaker::Validate(options.breaker);
  if (!status.ok()) return Status(status.code(), "breaker." + status.message());
  return std::unique_ptr<BreakerRegistry>(new BreakerRegistry(options));
}

BreakerRegistry::BreakerRegistry(const BreakerRegistryOptions& options)
    : options_(options), hub_(std::make_shared<Hub>()) {
  index_.reserve(std::min<size_t>(options.max_breakers, 1024));
}

BreakerRegistry::~BreakerRegistry() = default;

Result<std::shared_ptr<CircuitBreaker>> BreakerRegistry::Get(std::string_view key) {
  if (key.empty()) return InvalidArgumentError("key must not be empty");
  std::lock_guard<std::mutex> lock(mu_);
  auto found = index_.find(key);
  if (found != index_.end()) {
    lru_.splice(lru_.begin(), lru_, found->second);
    return found->second->breaker;
  }
  if (lru_.size() >= options_.max_breakers && !EvictOneLocked()) {
    return Status(StatusCode::kUnavailable,
                  "breaker registry is full: " + std::to_string(lru_.size()) +
                      " breakers (max_breakers) are all in use or not closed; cannot add '" +
                      std::string(key) + "'");
  }
  CircuitBreakerOptions breaker_options = options_.breaker;
  breaker_options.name = std::string(key);
  // Validated once in Create; only the name differs, and a key holding a
  // control character is refused here (kInvalidArgument).
  Result<std::unique_ptr<CircuitBreaker>> created = CircuitBreaker::Create(breaker_options);
  if (!created.ok()) return created.status();
  std::shared_ptr<CircuitBreaker> breaker(std::move(created).value());
  std::shared_ptr<Hub> hub = hub_;
  breaker->AddListener([hub](const BreakerTransition& t) { hub->Forward(t); });
  lru_.push_front(Entry{std::string(key), breaker});
  index_.emplace(std::string_view(lru_.front().key), lru_.begin());
  return breaker;
}

bool BreakerRegistry::EvictOneLocked() {
  for (auto it = lru_.end(); it != lru_.begin();) {
    --it;
    // use_count() == 1: only this entry holds it, and nobody can obtain a new
    // reference without mu_ (Get and Find take it), so it stays idle.
    if (it->breaker.use_count() == 1 &&
        it->breaker->state(TimePoint::min()) == BreakerState::kClosed) {
      index_.erase(std::string_view(it->key));
      lru_.erase(it);
      return true;
    }
  }
  return false;
}

std::shared_ptr<CircuitBreaker> BreakerRegistry::Find(std::string_view key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto found = index_.find(key);
  return found == index_.end() ? nullptr : found->second->breaker;
}

std::vector<std::shared_ptr<CircuitBreaker>> BreakerRegistry::Snapshot() const {
  std::vector<std::shared_ptr<CircuitBreaker>> all;
  std::lock_guard<std::mutex> lock(mu_);
  all.reserve(lru_.size());
  for (const Entry& entry : lru_) all.push_back(entry.breaker);
  return all;
}

void BreakerRegistry::ForEach(
    const std::function<void(const std::shared_ptr<CircuitBreaker>&)>& fn) const {
  for (const std::shared_ptr<CircuitBreaker>& breaker : Snapshot()) fn(breaker);
}

size_t BreakerRegistry::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lru_.size();
}

uint64_t BreakerRegistry::AddListener(BreakerListener listener) {
  std::lock_guard<std::mutex> lock(hub_->mu);
  auto list = std::make_shared<Hub::List>(*hub_->list);
  const uint64_t id = hub_->next_id++;
  list->emplace_back(id, std::move(listener));
  hub_->list = std::move(list);
  return id;
}

bool BreakerRegistry::RemoveListener(uint64_t id) {
  std::lock_guard<std::mutex> lock(hub_->mu);
  const Hub::List& current = *hub_->list;
  auto it = std::find_if(current.begin(), current.end(),
                         [id](const auto& entry) { return entry.first == id; });
  if (it == current.end()) return false;
  auto list = std::make_shared<Hub::List>(current);
  list->erase(list->begin() + (it - current.begin()));
  hub_->list = std::move(list);
  return true;
}

}  // namespace v0
}  // namespace mulligan
