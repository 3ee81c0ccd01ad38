// Header fields set per attempt (HttpClientCall::SetHeader,
// HttpAsyncEngine::SetHeader; Added in 0.5): what nginx logged for each
// attempt of a stepped call, and the fields refused.

#include <string>
#include <vector>

#include "http_fixture.h"

namespace mulligan {
namespace http_test {
namespace {

// The traceparent nginx logged for each request of script `id`, in order.
std::vector<std::string> TraceparentsOf(const std::string& id, size_t expected) {
  std::vector<std::string> seen;
  const auto give_up = std::chrono::steady_clock::now() + seconds(2);
  do {
    seen.clear();
    for (const LogEntry& e : ReadLog()) {
      if (e.uri.find("id=" + id + "&") != std::string::npos) seen.push_back(e.traceparent);
    }
    if (seen.size() >= expected) break;
    std::this_thread::sleep_for(milliseconds(5));
  } while (std::chrono::steady_clock::now() < give_up);
  return seen;
}

HttpRequest Traced(const std::string& id) {
  HttpRequest request = Get("/script?id=" + id + "&steps=503,503,200");
  request.headers.emplace_back("traceparent", "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01");
  request.no_wait = true;
  return request;
}

TEST(HttpSetHeaderTest, EachAttemptSendsTheFieldSetForIt) {
  HttpClientOptions options;
  options.retry = FastRetry(3);
  options.report_metrics = false;
  auto client = HttpClient::Create(options);
  ASSERT_TRUE(client.ok());
  auto call = (*client)->Begin(Traced("set-header-sync"));
  ASSERT_TRUE(call.ok()) << call.status().ToString();
  const std::vector<std::string> parents = {"b7ad6b7169203331", "00f067aa0ba90201"};
  for (const std::string& parent : parents) {
    ASSERT_TRUE((*call)->Attempt().retry());
    // Another case than the request's: the field is replaced, not doubled.
    ASSERT_TRUE((*call)
                    ->SetHeader("TraceParent", "00-0af7651916cd43dd8448eb211c80319c-" + parent + "-01")
                    .ok());
  }
  EXPECT_FALSE((*call)->Attempt().retry());
  Result<HttpResponse> response = (*call)->Finish();
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->attempts, 3);
  EXPECT_EQ(TraceparentsOf("set-header-sync", 3),
            (std::vector<std::string>{"00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01",
                                      "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
                                      "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba90201-01"}));
}

TEST(HttpSetHeaderTest, BadFieldsAreRefusedAndChangeNothing) {
  HttpClientOptions options;
  options.retry = FastRetry(2);
  options.report_metrics = false;
  auto client = HttpClient::Create(options);
  ASSERT_TRUE(client.ok());
  HttpRequest request = Traced("set-header-bad");
  request.idempotency_key = "key-1";
  auto call = (*client)->Begin(request);
  ASSERT_TRUE(call.ok());
  ASSERT_TRUE((*call)->Attempt().retry());
  const struct {
    std::string name, value, words;
  } bad[] = {
      {"Idempotency-Key", "key-2", "one key"},
      {"traceparent", "00-x\r\nX-Injected: 1", "CR, LF or NUL"},
      {"bad name", "v", "must be a token"},
      {"Content-Length", "3", "set by the client itself"},
      {"X-Big", std::string(kMaxRequestHeadBytes, 'a'), "request head too large"},
  };
  for (const auto& b : bad) {
    Status set = (*call)->SetHeader(b.name, b.value);
    EXPECT_EQ(set.code(), StatusCode::kInvalidArgument) << b.name;
    EXPECT_NE(set.message().find(b.words), std::string::npos) << set.message();
  }
  EXPECT_FALSE((*call)->Attempt().retry());  // 503, 503: attempts exhausted
  EXPECT_EQ((*call)->SetHeader("traceparent", "late").code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE((*call)->Finish().ok());
  const std::vector<std::string> seen = TraceparentsOf("set-header-bad", 2);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], seen[1]);  // the refused fields changed nothing
}

TEST(HttpSetHeaderTest, TheAsyncEngineSetsFieldsBetweenAttempts) {
  HttpClientOptions options;
  options.retry = FastRetry(3);
  options.report_metrics = false;
  auto engine = HttpAsyncEngine::Create(options);
  ASSERT_TRUE(engine.ok());
  PollDriver driver(**engine);
  Result<uint64_t> id = (*engine)->Begin(Traced("set-header-async"));
  ASSERT_TRUE(id.ok());
  EXPECT_EQ((*engine)->SetHeader(*id + 1, "traceparent", "x").code(), StatusCode::kInvalidArgument);
  for (const std::string parent : {"", "b7ad6b7169203331", "00f067aa0ba90201"}) {
    if (!parent.empty()) {
      ASSERT_TRUE(
          (*engine)->SetHeader(*id, "traceparent", "00-0af7651916cd43dd8448eb211c80319c-" + parent + "-01").ok());
    }
    ASSERT_TRUE((*engine)->StartAttempt(*id).ok());
    // In flight: refused until the attempt ends.
    EXPECT_EQ((*engine)->SetHeader(*id, "traceparent", "x").code(), StatusCode::kInvalidArgument);
    driver.RunUntilAttemptEnds(*id);
  }
  ASSERT_EQ(driver.done.count(*id), 1u);
  ASSERT_TRUE(driver.done.at(*id).ok());
  EXPECT_EQ(driver.done.at(*id)->status, 200);
  EXPECT_EQ(TraceparentsOf("set-header-async", 3),
            (std::vector<std::string>{"00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01",
                                      "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
                                      "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba90201-01"}));
}

}  // namespace
}  // namespace http_test
}  // namespace mulligan
