// core/src/idempotency/redis_store.cc — the idempotency store on Redis: three
// Lua scripts (reserve, complete, release), one key and one round trip each.

#include "mulligan/idempotency/redis_store.h"

#include <algorithm>
#include <mutex>
#include <utility>

#include "idempotency/key_rules.h"
#include "mulligan/base/random.h"

namespace mulligan {
inline namespace v0 {
namespace {

// Every script is safe to run twice (RedisScript::retry_safe): a second
// reserve finds the first one's reservation (409, never a second handler
// run), a second complete finds its own record (answer 2), a second release
// finds the key free (answer 0).
//
// A record: s = 'f' (in flight) | 'c' (completed), fp = fingerprint,
// tok = lease token, exp = logical expiry (caller's Unix ms), resp = the
// encoded response. Replies: {0, expired?} reserved, {1, resp} replay,
// {2, ms left} in flight, {3} fingerprint mismatch.
// ARGV: fingerprint, token, now_ms, lease_until_ms, lease_ms.
const RedisScript& ReserveScript() {
  static const RedisScript* script = new RedisScript(R"lua(
local e = redis.call('HMGET', KEYS[1], 's', 'fp', 'exp', 'resp')
local now = tonumber(ARGV[3])
local expired = 0
if e[1] then
  local exp = tonumber(e[3])
  if exp > now then
    if e[2] ~= ARGV[1] then return {3} end
    if e[1] == 'c' then return {1, e[4]} end
    return {2, exp - now}
  end
  redis.call('DEL', KEYS[1])
  expired = 1
end
redis.call('HSET', KEYS[1], 's', 'f', 'fp', ARGV[1], 'tok', ARGV[2], 'exp', ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return {0, expired}
)lua",
                                                     /*retry_safe=*/true);
  return *script;
}

// Replies 1 stored, 2 already stored by this lease (a repeated Complete),
// 0 lease not held. ARGV: token, ttl_until_ms, ttl_ms, encoded response.
// The token stays in the completed record so a repeat can be recognised.
const RedisScript& CompleteScript() {
  static const RedisScript* script = new RedisScript(R"lua(
local e = redis.call('HMGET', KEYS[1], 's', 'tok')
if e[2] ~= ARGV[1] then return 0 end
if e[1] == 'c' then return 2 end
redis.call('HSET', KEYS[1], 's', 'c', 'exp', ARGV[2], 'resp', ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
)lua",
                                                     /*retry_safe=*/true);
  return *script;
}

// Replies 1 released, 0 lease not held. ARGV: token.
const RedisScript& ReleaseScript() {
  static const RedisScript* script = new RedisScript(R"lua(
local e = redis.call('HMGET', KEYS[1], 's', 'tok')
if e[1] == 'f' and e[2] == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
)lua",
                                                     /*retry_safe=*/true);
  return *script;
}

int64_t FloorMillis(Duration d) { return std::chrono::floor<std::chrono::milliseconds>(d).count(); }

// A Redis expiry of at least 1 ms (PEXPIRE 0 would delete the record).
std::string ExpiryMillis(Duration d) { return std::to_string(std::max<int64_t>(1, FloorMillis(d))); }

Status NotHeld(const IdempotencyLease& lease) {
  return InvalidArgumentError("the idempotency lease of key \"" + lease.key +
                              "\" is not held any more (released, completed or expired and "
                              "taken over)");
}

Status Malformed(const char* script) {
  return InternalError(std::string("the idempotency ") + script +
                       " script answered an unexpected reply");
}

void AppendField(std::string* out, std::string_view s) {
  *out += std::to_string(s.size());
  out->push_back('\n');
  out->append(s.data(), s.size());
}

// Reads "<digits>\n" at *pos; false when absent or past `limit`.
bool ReadNumber(std::string_view in, size_t* pos, uint64_t limit, uint64_t* out) {
  uint64_t v = 0;
  size_t i = *pos;
  const size_t start = i;
  while (i < in.size() && in[i] >= '0' && in[i] <= '9' && i - start < 19) {
    v = v * 10 + static_cast<uint64_t>(in[i] - '0');
    ++i;
  }
  if (i == start || i >= in.size() || in[i] != '\n' || v > limit) return false;
  *pos = i + 1;
  *out = v;
  return true;
}

bool ReadField(std::string_view in, size_t* pos, std::string* out) {
  uint64_t n = 0;
  if (!ReadNumber(in, pos, in.size(), &n) || in.size() - *pos < n) return false;
  out->assign(in.data() + *pos, static_cast<size_t>(n));
  *pos += static_cast<size_t>(n);
  return true;
}

class RedisStore final : public IdempotencyStore {
 public:
  RedisStore(std::shared_ptr<RedisState> state, const IdempotencyStoreOptions& options)
      : state_(std::move(state)), options_(options), random_(Random::FromEntropy()) {
    Clock& clock = state_->clock();
    anchor_ = clock.Now();
    anchor_wall_ms_ = FloorMillis(clock.WallNow().time_since_epoch());
  }

  Result<Reservation> Reserve(std::string_view scope, std::string_view key,
                              std::string_view fingerprint, TimePoint now) override {
    if (Status s = internal::CheckIdempotencyKey(key, options_.max_key_length); !s.ok()) return s;
    const int64_t now_ms = WallMillis(now);
    const uint64_t token = NewToken();
    Result<RedisValue> reply = state_->Eval(
        ReserveScript(), {RecordKey(scope, key)},
        {std::string(fingerprint), std::to_string(token), std::to_string(now_ms),
         std::to_string(now_ms + FloorMillis(options_.lease)), ExpiryMillis(options_.lease)});
    if (!reply.ok()) return reply.status();
    const std::vector<RedisValue>& v = reply->elements;
    if (reply->type != RedisValue::Type::kArray || v.empty() ||
        v[0].type != RedisValue::Type::kInteger) {
      return Malformed("reserve");
    }
    Reservation r;
    std::lock_guard<std::mutex> lock(mu_);
    switch (v[0].integer) {
      case 0:
        r.state = ReserveState::kReserved;
        r.lease.scope.assign(scope.data(), scope.size());
        r.lease.key.assign(key.data(), key.size());
        r.lease.token = token;
        ++stats_.reserved;
        if (v.size() > 1 && v[1].integer == 1) ++stats_.expired;
        return r;
      case 1: {
        if (v.size() < 2 || v[1].type != RedisValue::Type::kString) return Malformed("reserve");
        Result<StoredResponse> response = DecodeStoredResponse(v[1].str);
        if (!response.ok()) return response.status();
        r.state = ReserveState::kReplay;
        r.response = std::make_shared<const StoredResponse>(std::move(response).value());
        ++stats_.replayed;
        return r;
      }
      case 2: {
        if (v.size() < 2 || v[1].type != RedisValue::Type::kInteger) return Malformed("reserve");
        r.state = ReserveState::kInFlight;
        r.retry_after = std::min<Duration>(std::chrono::milliseconds(v[1].integer),
                                           options_.in_flight_retry_after);
        ++stats_.in_flight_conflicts;
        return r;
      }
      case 3:
        r.state = ReserveState::kFingerprintMismatch;
        ++stats_.fingerprint_mismatches;
        return r;
      default:
        return Malformed("reserve");
    }
  }

  Status Complete(const IdempotencyLease& lease, StoredResponse response, TimePoint now) override {
    if (Status valid = ValidateStoredResponse(response); !valid.ok()) return valid;
    if (lease.token == 0) return NotHeld(lease);
    const int64_t now_ms = WallMillis(now);
    Result<RedisValue> reply = state_->Eval(
        CompleteScript(), {RecordKey(lease.scope, lease.key)},
        {std::to_string(lease.token), std::to_string(now_ms + FloorMillis(options_.ttl)),
         ExpiryMillis(options_.ttl), EncodeStoredResponse(response)});
    if (!reply.ok()) return reply.status();
    if (reply->type != RedisValue::Type::kInteger) return Malformed("complete");
    if (reply->integer == 0) return NotHeld(lease);
    std::lock_guard<std::mutex> lock(mu_);
    if (reply->integer == 1) ++stats_.completed;
    return OkStatus();
  }

  Status Release(const IdempotencyLease& lease) override {
    if (lease.token == 0) return NotHeld(lease);
    Result<RedisValue> reply = state_->Eval(ReleaseScript(), {RecordKey(lease.scope, lease.key)},
                                            {std::to_string(lease.token)});
    if (!reply.ok()) return reply.status();
    if (reply->type != RedisValue::Type::kInteger) return Malformed("release");
    if (reply->integer == 0) return NotHeld(lease);
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.released;
    return OkStatus();
  }

  // The server expires records itself (PEXPIRE); nothing to sweep here.
  void Sweep(TimePoint) override {}

  IdempotencyStoreStats Stats() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }

  const IdempotencyStoreOptions& options() const override { return options_; }
  const char* backend() const override { return "redis"; }

 private:
  int64_t WallMillis(TimePoint now) const { return anchor_wall_ms_ + FloorMillis(now - anchor_); }

  // Length-prefixed scope, so (scope "a:b", key "c") and (scope "a", key "b:c")
  // stay apart.
  std::string RecordKey(std::string_view scope, std::string_view key) const {
    std::string name = std::to_string(scope.size());
    name.push_back(':');
    name.append(scope.data(), scope.size());
    name.push_back(':');
    name.append(key.data(), key.size());
    return state_->Key("idem", name);
  }

  uint64_t NewToken() {
    std::lock_guard<std::mutex> lock(mu_);
    uint64_t t = 0;
    while (t == 0) t = random_.NextU64();
    return t;
  }

  std::shared_ptr<RedisState> state_;
  IdempotencyStoreOptions options_;
  TimePoint anchor_;
  int64_t anchor_wall_ms_ = 0;
  mutable std::mutex mu_;
  Random random_;  // guarded by mu_
  IdempotencyStoreStats stats_;  // guarded by mu_
};

}  // namespace

std::string EncodeStoredResponse(const StoredResponse& response) {
  size_t size = 32 + response.body.size();
  for (const auto& [name, value] : response.headers) size += name.size() + value.size() + 16;
  std::string out;
  out.reserve(size);
  out += "1\n";  // the format's version
  out += std::to_string(response.status);
  out.push_back('\n');
  out += std::to_string(response.headers.size());
  out.push_back('\n');
  for (const auto& [name, value] : response.headers) {
    AppendField(&out, name);
    AppendField(&out, value);
  }
  AppendField(&out, response.body);
  return out;
}

Result<StoredResponse> DecodeStoredResponse(std::string_view bytes) {
  const Status corrupt = InternalError("a stored idempotency response is corrupt (" +
                                       std::to_string(bytes.size()) + " bytes)");
  size_t pos = 0;
  uint64_t version = 0, status = 0, count = 0;
  if (!ReadNumber(bytes, &pos, 1, &version) || version != 1) return corrupt;
  if (!ReadNumber(bytes, &pos, 599, &status) || status < 100) return corrupt;
  // Each header field takes at least 4 bytes ("0\n0\n").
  if (!ReadNumber(bytes, &pos, bytes.size() / 4, &count)) return corrupt;
  StoredResponse r;
  r.status = static_cast<int>(status);
  r.headers.resize(static_cast<size_t>(count));
  for (auto& [name, value] : r.headers) {
    if (!ReadField(bytes, &pos, &name) || !ReadField(bytes, &pos, &value)) return corrupt;
  }
  if (!ReadField(bytes, &pos, &r.body) || pos != bytes.size()) return corrupt;
  return r;
}

Result<std::unique_ptr<IdempotencyStore>> RedisIdempotencyStore::Create(
    std::shared_ptr<RedisState> state, const IdempotencyStoreOptions& options) {
  if (state == nullptr) return InvalidArgumentError("state must not be null");
  if (options.ttl <= Duration::zero()) return InvalidArgumentError("ttl must be > 0");
  if (options.lease <= Duration::zero()) return InvalidArgumentError("lease must be > 0");
  if (options.in_flight_retry_after < Duration::zero()) {
    return InvalidArgumentError("in_flight_retry_after must be >= 0");
  }
  if (options.max_key_length < 1) return InvalidArgumentError("max_key_length must be >= 1");
  return std::unique_ptr<IdempotencyStore>(new RedisStore(std::move(state), options));
}

}  // namespace v0
}  // namespace mulligan
