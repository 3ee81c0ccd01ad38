// core/src/http/breaker_key_template.cc — the rules of breaker keys that need
// no URL parser: ValidateBreakerKey and MatchPathTemplate (breaker_key.h).
// Part of mulligan_engine (std only), so that the configuration loader can
// check a "breaker_key" without linking libcurl; HttpBreakerKey, which parses
// URLs, stays in breaker_key.cc (mulligan_http).
#include <string>
#include <string_view>

#include "mulligan/http/breaker_key.h"

namespace mulligan {
inline namespace v0 {

namespace {

// Splits off the first segment of `path` (which starts after a '/'):
// returns it and leaves `rest` at the next '/' (or empty).
std::string_view NextSegment(std::string_view* rest) {
  const size_t slash = rest->find('/');
  std::string_view segment = rest->substr(0, slash);
  *rest = slash == std::string_view::npos ? std::string_view() : rest->substr(slash);
  return segment;
}

bool IsParameter(std::string_view segment) {
  return segment.size() >= 3 && segment.front() == '{' && segment.back() == '}';
}

bool IsRestParameter(std::string_view segment) {
  return IsParameter(segment) && segment.size() >= 6 &&
         segment.substr(segment.size() - 4) == "...}";
}

Status CheckTemplate(const std::string& t) {
  auto bad = [&t](const char* why) {
    return InvalidArgumentError("breaker key template '" + t + "' is malformed: " + why);
  };
  if (t.empty() || t.front() != '/') return bad("it must start with '/'");
  std::string_view rest = std::string_view(t).substr(1);
  for (;;) {
    const std::string_view segment = NextSegment(&rest);
    const bool braces = segment.find_first_of("{}") != std::string_view::npos;
    if (braces) {
      if (!IsParameter(segment)) return bad("'{' and '}' must enclose a whole segment");
      const std::string_view name =
          IsRestParameter(segment) ? segment.substr(1, segment.size() - 5)
                                   : segment.substr(1, segment.size() - 2);
      if (name.empty() || name.find_first_of("{}") != std::string_view::npos) {
        return bad("a parameter needs a name without braces");
      }
      if (IsRestParameter(segment) && !rest.empty()) {
        return bad("a '{name...}' parameter must be the last segment");
      }
    }
    if (rest.empty()) return OkStatus();
    rest.remove_prefix(1);  // the '/'
  }
}

}  // namespace

Status ValidateBreakerKey(const BreakerKeyOptions& options) {
  switch (options.kind) {
    case BreakerKeyKind::kOrigin:
    case BreakerKeyKind::kHost:
    case BreakerKeyKind::kPath:
      return OkStatus();
    case BreakerKeyKind::kPathTemplate:
      if (options.templates.empty()) {
        return InvalidArgumentError("breaker key kind path_template needs at least one template");
      }
      for (const std::string& t : options.templates) {
        Status status = CheckTemplate(t);
        if (!status.ok()) return status;
      }
      return OkStatus();
    case BreakerKeyKind::kFunction:
      if (!options.function) {
        return InvalidArgumentError("breaker key kind function needs a function");
      }
      return OkStatus();
  }
  return InvalidArgumentError("breaker key kind must be origin, host, path, path_template or "
                              "function, got " + std::to_string(static_cast<int>(options.kind)));
}

bool MatchPathTemplate(std::string_view path_template, std::string_view path) {
  if (path_template.empty() || path.empty() || path_template.front() != '/' ||
      path.front() != '/') {
    return false;
  }
  std::string_view t = path_template.substr(1);
  std::string_view p = path.substr(1);
  for (;;) {
    const std::string_view want = NextSegment(&t);
    if (IsRestParameter(want)) return !p.empty() && p.front() != '/';  // one or more segments
    const std::string_view got = NextSegment(&p);
    if (IsParameter(want) ? got.empty() : want != got) return false;
    if (t.empty() || p.empty()) return t.empty() && p.empty();
    t.remove_prefix(1);
    p.remove_prefix(1);
  }
}

}  // namespace v0
}  // namespace mulligan
