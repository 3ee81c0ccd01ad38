// core/src/config/state_format.cc — the mulligan format's top-level "state"
// section and the "shared" flag of "breakers" and "rate_limiters" entries
// (issue 16; config.h's StateSettings; docs/configuration.md "Shared
// state"). Read and checked only: nothing here connects to Redis.

#include <string>
#include <string_view>

#include "formats.h"
#include "mulligan/state/backend.h"
#include "mulligan/state/redis.h"
#include "state_format.h"

namespace mulligan {
inline namespace v0 {
namespace internal {
namespace {

// The bounds of the two timeouts, those of RedisStateOptions.
constexpr double kMinTimeoutSeconds = 0.001;
constexpr double kMaxTimeoutSeconds = 3600;

// `url` with everything between the scheme's "://" (or the start, when the
// text has none, as in a mistyped "redis//:pw@host") and the last '@'
// replaced by "***", so a message may show the URL's shape without its
// password. The last '@' anywhere counts, not the last before the path: a
// malformed URL's password may hold '/' or '?', and hiding too much in an
// error text costs nothing.
std::string WithoutSecret(std::string_view url) {
  const size_t at = url.rfind('@');
  if (at == std::string_view::npos) return std::string(url);
  const size_t scheme = url.find("://");
  const size_t from = scheme != std::string_view::npos && scheme + 3 <= at ? scheme + 3 : 0;
  return std::string(url.substr(0, from)) + "***" + std::string(url.substr(at));
}

bool ReadRedisUrl(Context& ctx, const std::string& path, const json::value& v, std::string& out) {
  if (!v.is_string()) {
    ctx.Expected(path, "a redis:// URL", v);
    return false;
  }
  const std::string_view url = v.get_string();
  if (url.rfind("redis://", 0) != 0 && url.rfind("rediss://", 0) != 0) {
    ctx.Error(path, "expected a redis:// URL, got " + Quote(WithoutSecret(url)));
    return false;
  }
  Result<RedisUrl> parsed = ParseRedisUrl(url);
  if (!parsed.ok()) {
    // ParseRedisUrl names the part that is wrong, never its value.
    std::string what = parsed.status().message();
    if (what.rfind("url: ", 0) == 0) what.erase(0, 5);
    ctx.Error(path, what);
    return false;
  }
  out = std::string(url);
  return true;
}

bool ReadTimeout(Context& ctx, const std::string& path, const json::value& v, Duration& out) {
  Duration d{};
  if (!ReadDuration(ctx, path, v, /*positive=*/true, d)) return false;
  const double seconds = std::chrono::duration<double>(d).count();
  if (seconds < kMinTimeoutSeconds || seconds > kMaxTimeoutSeconds) {
    ctx.Expected(path, "a duration in [1ms, 1h]", v);
    return false;
  }
  out = d;
  return true;
}

}  // namespace

void ReadStateSection(Context& ctx, const json::object& root, ConfigSnapshot& out) {
  const json::value* v = root.if_contains("state");
  if (v == nullptr) return;
  if (v->is_string()) {
    // Likely a URL written without the object around it: shown without
    // its user information (a password).
    ctx.Error("state", "expected an object such as {\"redis\": \"redis://host:6379/0\"}, got " +
                           Quote(WithoutSecret(v->get_string())));
    return;
  }
  const json::object* o = AsObject(ctx, "state", *v, "an object");
  if (o == nullptr) return;
  const size_t before = ctx.error_count();
  StateSettings settings;
  for (const auto& kv : *o) {
    const std::string path = Join("state", kv.key());
    const std::string_view key = kv.key();
    if (key == "redis") {
      ReadRedisUrl(ctx, path, kv.value(), settings.redis);
    } else if (key == "prefix") {
      if (!ReadString(ctx, path, kv.value(), settings.prefix)) continue;
      Status valid = ValidateStatePrefix(settings.prefix);
      if (!valid.ok()) {
        std::string what = valid.message();
        if (what.rfind("prefix ", 0) == 0) what.erase(0, 7);
        ctx.Error(path, what);
      }
    } else if (key == "timeout") {
      ReadTimeout(ctx, path, kv.value(), settings.timeout);
    } else if (key == "connect_timeout") {
      Duration d{};
      if (ReadTimeout(ctx, path, kv.value(), d)) settings.connect_timeout = d;
    } else {
      const std::string best = Suggest(key, {"redis", "prefix", "timeout", "connect_timeout"});
      ctx.Error(path, best.empty()
                          ? "unknown field; expected one of: redis, prefix, timeout, "
                            "connect_timeout"
                          : "unknown field, did you mean " + Quote(best) + "?");
    }
  }
  if (!o->contains("redis")) ctx.Error("state.redis", "missing: this field is required");
  if (ctx.error_count() == before) out.state = std::move(settings);
}

bool ReadSharedFlag(Context& ctx, const json::object& root, const std::string& path,
                    const std::string& name, const json::object& entry, bool& shared) {
  shared = false;
  const json::value* v = entry.if_contains("shared");
  if (v == nullptr) return true;
  const std::string field = Join(path, "shared");
  if (!ReadBool(ctx, field, *v, shared)) return false;
  if (!shared) return true;
  if (!root.contains("state")) {
    ctx.Error(field, "needs the top-level \"state\" section (the Redis the shared objects "
                     "live in)");
    return false;
  }
  Status valid = ValidateSharedName(name);
  if (!valid.ok()) {
    ctx.Error(path, valid.message());
    return false;
  }
  return true;
}

}  // namespace internal
}  // namespace v0
}  // namespace mulligan
