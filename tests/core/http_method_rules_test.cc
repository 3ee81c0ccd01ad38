// HttpMethodRule (http/client.h): which requests are replayed once bytes were
// sent. The table is DESIGN.md section 5's "Methods" and urllib3's Retry
// allowed_methods, written out by hand.
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "mulligan/http/client.h"

namespace mulligan {
namespace {

struct Row {
  const char* method;
  bool keyed;
  bool idempotent, strict, safe, all, allowed;  // allowed = {"GET", "POST"}
};

TEST(HttpMethodRules, TruthTable) {
  const std::vector<std::string> allowed = {"GET", "POST"};
  const Row rows[] = {
      {"GET", false, true, true, true, true, true},
      {"HEAD", false, true, true, true, true, false},
      {"OPTIONS", false, true, true, true, true, false},
      {"TRACE", false, true, false, false, true, false},
      {"PUT", false, true, false, false, true, false},
      {"DELETE", false, true, false, false, true, false},
      {"POST", false, false, false, false, true, true},
      {"PATCH", false, false, false, false, true, false},
      {"POST", true, true, false, true, true, true},
      {"PATCH", true, true, false, true, true, false},
      {"PUT", true, true, false, true, true, false},
      {"get", false, false, false, false, true, false},  // methods are case-sensitive
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(std::string(r.method) + (r.keyed ? " keyed" : ""));
    EXPECT_EQ(HttpMethodReplaySafe(HttpMethodRule::kIdempotent, allowed, r.method, r.keyed),
              r.idempotent);
    EXPECT_EQ(HttpMethodReplaySafe(HttpMethodRule::kStrict, allowed, r.method, r.keyed), r.strict);
    EXPECT_EQ(HttpMethodReplaySafe(HttpMethodRule::kSafe, allowed, r.method, r.keyed), r.safe);
    EXPECT_EQ(HttpMethodReplaySafe(HttpMethodRule::kAll, allowed, r.method, r.keyed), r.all);
    EXPECT_EQ(HttpMethodReplaySafe(HttpMethodRule::kAllowed, allowed, r.method, r.keyed),
              r.allowed);
  }
  EXPECT_STREQ(HttpMethodRuleName(HttpMethodRule::kSafe), "safe");
}

// The response outcome every front door builds (HttpClient, the async
// engine, the Python adapters): Retry-After parsed at the given wall time,
// and a keyed 409 with Retry-After turned into a retryable failure.
TEST(HttpResponseOutcome, RetryAfterAndTheKeyed409Rule) {
  const WallTime now = WallTime(std::chrono::seconds(784111657));
  Outcome plain = HttpResponseOutcome(503, std::nullopt, false, now);
  EXPECT_EQ(plain.http_status, 503);
  EXPECT_FALSE(plain.retry_after.has_value());
  Outcome hinted = HttpResponseOutcome(429, "7", false, now);
  ASSERT_TRUE(hinted.retry_after.has_value());
  EXPECT_EQ(*hinted.retry_after, std::chrono::seconds(7));
  Outcome dated = HttpResponseOutcome(503, "Sun, 06 Nov 1994 08:49:37 GMT", false, now);
  ASSERT_TRUE(dated.retry_after.has_value());
  EXPECT_EQ(*dated.retry_after, std::chrono::seconds(120));
  EXPECT_FALSE(HttpResponseOutcome(503, "soon", false, now).retry_after.has_value());
  Outcome conflict = HttpResponseOutcome(409, "2", false, now);
  EXPECT_EQ(conflict.http_status, 409);
  EXPECT_EQ(conflict.error, ErrorKind::kNone);
  Outcome in_flight = HttpResponseOutcome(409, "2", true, now);
  EXPECT_EQ(in_flight.error, ErrorKind::kRetryable);
  ASSERT_TRUE(in_flight.retry_after.has_value());
  EXPECT_EQ(*in_flight.retry_after, std::chrono::seconds(2));
  EXPECT_EQ(HttpResponseOutcome(409, std::nullopt, true, now).error, ErrorKind::kNone);
}

TEST(HttpMethodRules, CreateRefusesBadMethods) {
  HttpClientOptions options;
  options.method_rule = HttpMethodRule::kAllowed;
  options.allowed_methods = {"GET", "GE T"};
  Result<std::unique_ptr<HttpClient>> c = HttpClient::Create(options);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(), "allowed_methods must hold HTTP methods (tokens), got \"GE T\"");
  options.allowed_methods = {"GET"};
  options.method_rule = static_cast<HttpMethodRule>(9);
  EXPECT_EQ(HttpClient::Create(options).status().message(),
            "method_rule 9 is not a known HttpMethodRule");
}

}  // namespace
}  // namespace mulligan
