// tests/core/http_truncation_test.cc — a response that ends early is a
// failure of kind kTruncated (or kConnectionReset before a whole status
// line), never a success: every cut point of a response head, of a
// Content-Length body and of a chunked body, through HttpClient and
// HttpAsyncEngine, retried under the method rules; and the header callback
// that notices the end of a head (transfer.h's WriteHeader).
//
// The server is raw_http_server.h: real sockets on loopback that write the
// scripted bytes and close. The expected kinds follow from RFC 9112 (a head
// ends with an empty line; a body has Content-Length bytes or ends with the
// last chunk) and from what libcurl 7.88 reports for each cut (checked with
// curl(1) on the same bytes: exit 0 for a cut inside the head, 18
// CURLE_PARTIAL_FILE for a short body, 52 CURLE_GOT_NOTHING before the end
// of the status line or after a lone 1xx, 1 CURLE_UNSUPPORTED_PROTOCOL for
// an HTTP/0.9 reply).

#include "http/transfer.h"

#include "http_fixture.h"
#include "raw_http_server.h"

namespace mulligan {
namespace http_test {
namespace {

using internal::Transfer;
using internal::WriteHeader;

// A whole response whose bytes the tests cut: a 17-byte status line, a
// head of kWholeHead bytes in all, a 5-byte body.
const std::string kWholeHead =
    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n"
    "Connection: close\r\nX-Mark: whole\r\n\r\n";
const std::string kWhole = kWholeHead + "hello";
constexpr size_t kStatusLine = 17;  // "HTTP/1.1 200 OK\r\n"

const std::string kChunkedHead =
    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
const std::string kChunked = kChunkedHead + "5\r\nhello\r\n0\r\n\r\n";

// The kind a client must report for kWhole cut after `n` bytes.
ErrorKind KindOfCut(size_t n) {
  // Before the status line's LF libcurl has no response line at all.
  if (n < kStatusLine) return ErrorKind::kConnectionReset;
  // Inside the head (no empty line yet), or a body short of its 5 bytes.
  return ErrorKind::kTruncated;
}

HttpRequest Request(const RawHttpServer& server, const std::string& method) {
  HttpRequest r;
  r.method = method;
  r.url = server.Url("/");
  if (method == "POST") r.body = "payload";
  return r;
}

// One call against a server that answers `first`, then kWhole.
struct Attempted {
  Result<HttpResponse> result = InternalError("not run");
  HttpCallInfo info;
  std::vector<RawHttpServer::Request> requests;
};

Attempted Send(const std::string& first, const std::string& method, int attempts,
         bool keyed = false) {
  RawHttpServer server({first, kWhole});
  auto client = MakeClient(FastRetry(attempts));
  Attempted run;
  HttpRequest r = Request(server, method);
  if (keyed) r.idempotency_key = "7f3e1c2a-5b6d-4e8f-9a0b-1c2d3e4f5a6b";
  run.result = client->Send(r, &run.info);
  run.requests = server.requests();
  return run;
}

// ---------------------------------------------------------------------------
// The header callback

size_t Feed(Transfer& t, std::string line) {
  return WriteHeader(line.data(), 1, line.size(), &t);
}

TEST(HttpHeaderCallbackTest, TheEmptyLineEndsTheHeadAndAStatusLineStartsOne) {
  Transfer t;
  EXPECT_FALSE(t.head_complete);
  EXPECT_EQ(Feed(t, "HTTP/1.1 100 Continue\r\n"), 23u);
  EXPECT_EQ(Feed(t, "Link: </a>\r\n"), 12u);
  EXPECT_FALSE(t.head_complete);
  EXPECT_EQ(Feed(t, "\r\n"), 2u);
  EXPECT_TRUE(t.head_complete);
  ASSERT_EQ(t.headers.size(), 1u);
  // The final response: a new head, the interim fields dropped.
  EXPECT_EQ(Feed(t, "HTTP/1.1 200 OK\r\n"), 17u);
  EXPECT_FALSE(t.head_complete);
  EXPECT_TRUE(t.headers.empty());
  Feed(t, "A:  one \r\n");
  Feed(t, "\t two\r\n");  // obs-fold
  Feed(t, "B:\r\n");
  EXPECT_FALSE(t.head_complete);
  EXPECT_EQ(Feed(t, "\n"), 1u);  // a bare LF ends a head too (RFC 9112 section 2.2)
  EXPECT_TRUE(t.head_complete);
  // A trailer field after the body: added, and the head stays complete.
  Feed(t, "T: x\r\n");
  EXPECT_TRUE(t.head_complete);
  const HttpHeaders expected = {{"A", "one two"}, {"B", ""}, {"T", "x"}};
  EXPECT_EQ(t.headers, expected);
}

TEST(HttpHeaderCallbackTest, LinesThatAreNotFieldsAreConsumedAndIgnored) {
  Transfer t;
  Feed(t, "HTTP/2 204 \r\n");
  EXPECT_EQ(Feed(t, "no colon here\r\n"), 15u);
  EXPECT_EQ(Feed(t, ": no name\r\n"), 11u);
  EXPECT_EQ(Feed(t, " fold with nothing before\r\n"), 27u);
  EXPECT_EQ(Feed(t, "\r"), 1u);  // not an empty line: the head goes on
  EXPECT_TRUE(t.headers.empty());
  EXPECT_FALSE(t.head_complete);
  EXPECT_FALSE(t.failed_alloc);
}

TEST(HttpHeaderCallbackTest, AStatusLineInAnyCaseBeginsTheHeadAfterAnInterimOne) {
  // libcurl's status-line check is case-insensitive: after a 100 it takes
  // "http/1.1 200 OK" as the final response (HTTP/1.0 200). Only "HTTP/" in
  // upper case began a head, so the 100's end left the head complete and a
  // cut inside the final head counted as a whole response. Found by fuzzing
  // (tests/fuzz/fuzz_header_callback).
  Transfer t;
  Feed(t, "HTTP/1.1 100 Continue\r\n");
  Feed(t, "X-A: 1\r\n");
  Feed(t, "\r\n");
  EXPECT_TRUE(t.head_complete);
  EXPECT_EQ(Feed(t, "http/1.1 200 OK\r\n"), 17u);
  EXPECT_FALSE(t.head_complete);
  EXPECT_TRUE(t.headers.empty());
  Feed(t, "X-B: 2\r\n");
  EXPECT_FALSE(t.head_complete);
  const HttpHeaders expected = {{"X-B", "2"}};
  EXPECT_EQ(t.headers, expected);
}

TEST(HttpHeaderCallbackTest, InsideAHeadAStatusLineIsNoNewHead) {
  // libcurl takes the first line of a head for its status line and every
  // later one for a field: the fields so far stay.
  Transfer t;
  Feed(t, "HTTP/1.1 200 OK\r\n");
  Feed(t, "A: 1\r\n");
  EXPECT_EQ(Feed(t, "HTTP/1.1 503 x\r\n"), 16u);
  EXPECT_FALSE(t.head_complete);
  const HttpHeaders expected = {{"A", "1"}};
  EXPECT_EQ(t.headers, expected);
}

TEST(HttpHeaderCallbackTest, ALineThatBeginsWithCrEndsTheHead) {
  // libcurl (7.88) ends a head at any line that begins with CR or LF and
  // reads what follows as the body; the callback agrees, so such a response
  // is no truncation. Found by fuzzing (tests/fuzz/fuzz_header_callback).
  Transfer t;
  Feed(t, "HTTP/1.1 200 OK\r\n");
  EXPECT_EQ(Feed(t, "\rX: 2\r\n"), 7u);
  EXPECT_TRUE(t.head_complete);
  EXPECT_TRUE(t.headers.empty());
  Transfer u;
  Feed(u, "HTTP/1.1 200 OK\r\n");
  EXPECT_EQ(Feed(u, "\n\r\n"), 3u);
  EXPECT_TRUE(u.head_complete);
}

// ---------------------------------------------------------------------------
// Every cut point, blocking client

TEST(HttpTruncationTest, EveryCutOfAResponseIsAFailureOfItsKind) {
  for (size_t n = 0; n < kWhole.size(); ++n) {
    Attempted run = Send(kWhole.substr(0, n), "GET", 1);
    ASSERT_FALSE(run.result.ok()) << "cut at " << n << " returned a response "
                                  << run.result->status;
    EXPECT_EQ(run.result.status().code(), StatusCode::kTransport) << n;
    EXPECT_EQ(run.info.last_error, KindOfCut(n)) << "cut at " << n << ": "
                                                 << run.result.status().ToString();
    EXPECT_EQ(run.info.attempts, 1) << n;
    EXPECT_EQ(run.info.last_status, 0) << n;
    if (KindOfCut(n) == ErrorKind::kTruncated) {
      EXPECT_NE(run.result.status().message().find("truncated"), std::string::npos)
          << run.result.status().message();
    }
  }
}

TEST(HttpTruncationTest, AGetCutAnywhereIsRetriedAndTheHealthyRetrySucceeds) {
  for (size_t n = 0; n < kWhole.size(); ++n) {
    Attempted run = Send(kWhole.substr(0, n), "GET", 3);
    ASSERT_TRUE(run.result.ok()) << "cut at " << n << ": " << run.result.status().ToString();
    EXPECT_EQ(run.result->status, 200);
    EXPECT_EQ(run.result->body, "hello") << n;
    EXPECT_EQ(run.result->Header("X-Mark"), "whole") << n;
    EXPECT_EQ(run.result->attempts, 2) << n;
    EXPECT_EQ(run.result->stop_reason, StopReason::kSucceeded);
    EXPECT_EQ(run.requests.size(), 2u) << n;
  }
}

TEST(HttpTruncationTest, AnUnkeyedPostCutAnywhereReachesTheServerOnce) {
  for (size_t n = 0; n < kWhole.size(); ++n) {
    Attempted run = Send(kWhole.substr(0, n), "POST", 3);
    ASSERT_FALSE(run.result.ok()) << "cut at " << n;
    EXPECT_EQ(run.info.last_error, KindOfCut(n)) << n;
    EXPECT_EQ(run.info.attempts, 1) << n;
    EXPECT_EQ(run.info.stop_reason, StopReason::kNotReplaySafe) << n;
    ASSERT_EQ(run.requests.size(), 1u) << n;
    EXPECT_EQ(run.requests[0].method, "POST");
  }
}

TEST(HttpTruncationTest, AKeyedPostCutAnywhereIsRetriedWithItsKey) {
  for (size_t n : {size_t{0}, size_t{9}, kStatusLine, kStatusLine + 10, kWholeHead.size() - 1,
                   kWholeHead.size(), kWhole.size() - 1}) {
    Attempted run = Send(kWhole.substr(0, n), "POST", 3, /*keyed=*/true);
    ASSERT_TRUE(run.result.ok()) << "cut at " << n << ": " << run.result.status().ToString();
    EXPECT_EQ(run.result->body, "hello");
    EXPECT_EQ(run.result->attempts, 2);
    ASSERT_EQ(run.requests.size(), 2u) << n;
    EXPECT_EQ(run.requests[0].idempotency_key, "7f3e1c2a-5b6d-4e8f-9a0b-1c2d3e4f5a6b");
    EXPECT_EQ(run.requests[1].idempotency_key, run.requests[0].idempotency_key);
  }
}

TEST(HttpTruncationTest, EveryCutOfAChunkedBodyIsTruncated) {
  // Up to the last chunk's CR: a cut after it, before its final LF, leaves
  // every body byte and the zero-size last chunk received, and libcurl
  // accepts it (the content is whole: a success is right).
  for (size_t n = kChunkedHead.size(); n + 1 < kChunked.size(); ++n) {
    Attempted run = Send(kChunked.substr(0, n), "GET", 1);
    ASSERT_FALSE(run.result.ok()) << "cut at " << n;
    EXPECT_EQ(run.info.last_error, ErrorKind::kTruncated) << n;
  }
  for (size_t n : {kChunked.size() - 1, kChunked.size()}) {
    Attempted whole = Send(kChunked.substr(0, n), "GET", 1);
    ASSERT_TRUE(whole.result.ok()) << whole.result.status().ToString();
    EXPECT_EQ(whole.result->body, "hello");
  }
}

// ---------------------------------------------------------------------------
// The other ways a transfer can end without a whole message

TEST(HttpTruncationTest, ALoneInterimResponseIsTruncated) {
  for (const std::string& reply :
       {std::string("HTTP/1.1 100 Continue\r\n\r\n"),
        std::string("HTTP/1.1 103 Early Hints\r\nLink: </a>; rel=preload\r\n\r\n"),
        std::string("HTTP/1.1 103 Early Hints\r\nLink: </a>; rel=preload\r\n"),
        std::string("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nX-Mark: final\r\n")}) {
    Attempted run = Send(reply, "GET", 1);
    ASSERT_FALSE(run.result.ok()) << reply;
    EXPECT_EQ(run.info.last_error, ErrorKind::kTruncated) << reply;
    Attempted retried = Send(reply, "GET", 2);
    ASSERT_TRUE(retried.result.ok()) << retried.result.status().ToString();
    EXPECT_EQ(retried.result->Header("X-Mark"), "whole");
  }
  // An interim response before a whole final one is no failure; only the
  // final response's fields are kept.
  Attempted run = Send("HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n" + kWhole, "GET", 1);
  ASSERT_TRUE(run.result.ok()) << run.result.status().ToString();
  EXPECT_EQ(run.result->body, "hello");
  EXPECT_EQ(run.result->Header("Link"), std::nullopt);
  EXPECT_EQ(run.result->Header("X-Mark"), "whole");
}

TEST(HttpTruncationTest, AFinalHeadInLowerCaseCutAfterAnInterimOneIsTruncated) {
  // curl(1) 7.88 exits 0 with status 200 on these bytes: the head of the
  // final response never ended.
  const std::string reply = "HTTP/1.1 100 Continue\r\n\r\nhttp/1.1 200 OK\r\nX-B: 2\r\n";
  Attempted run = Send(reply, "GET", 1);
  ASSERT_FALSE(run.result.ok()) << "returned a response " << run.result->status;
  EXPECT_EQ(run.info.last_error, ErrorKind::kTruncated) << run.result.status().ToString();
  Attempted retried = Send(reply, "GET", 2);
  ASSERT_TRUE(retried.result.ok()) << retried.result.status().ToString();
  EXPECT_EQ(retried.result->Header("X-Mark"), "whole");
  EXPECT_EQ(retried.result->Header("X-B"), std::nullopt);
  EXPECT_EQ(retried.result->attempts, 2);
}

TEST(HttpTruncationTest, AHeadEndedByALineThatBeginsWithCrIsWhole) {
  // libcurl ends the head at "\rX: 2\r\n" and reads "abc" as the body, to
  // the connection's end: a whole (if odd) response, not a truncation.
  Attempted run = Send("HTTP/1.1 200 OK\r\nConnection: close\r\n\rX: 2\r\nabc", "GET", 1);
  ASSERT_TRUE(run.result.ok()) << run.result.status().ToString();
  EXPECT_EQ(run.result->body, "abc");
  EXPECT_EQ(run.result->Header("X"), std::nullopt);
  EXPECT_EQ(run.result->attempts, 1);
}

TEST(HttpTruncationTest, AnHttp09ReplyIsTerminal) {
  // No status line: libcurl refuses HTTP/0.9 (CURLE_UNSUPPORTED_PROTOCOL).
  // The same request meets the same server: not retried.
  Attempted run = Send("hello world\n", "GET", 3);
  ASSERT_FALSE(run.result.ok());
  EXPECT_EQ(run.info.last_error, ErrorKind::kTerminal) << run.result.status().ToString();
  EXPECT_EQ(run.info.attempts, 1);
  EXPECT_EQ(run.info.stop_reason, StopReason::kTerminal);
}

TEST(HttpTruncationTest, MessagesThatEndWithTheConnectionAreWhole) {
  // A body delimited by the connection's end (RFC 9112 section 6.3, rule 8),
  // a 204, and a HEAD answer are complete messages.
  Attempted close_delimited = Send("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nabc", "GET", 1);
  ASSERT_TRUE(close_delimited.result.ok()) << close_delimited.result.status().ToString();
  EXPECT_EQ(close_delimited.result->body, "abc");
  Attempted no_content = Send("HTTP/1.1 204 No Content\r\n\r\n", "GET", 1);
  ASSERT_TRUE(no_content.result.ok()) << no_content.result.status().ToString();
  EXPECT_EQ(no_content.result->status, 204);
  Attempted head = Send(kWholeHead, "HEAD", 1);
  ASSERT_TRUE(head.result.ok()) << head.result.status().ToString();
  EXPECT_EQ(head.result->Header("Content-Length"), "5");
  EXPECT_EQ(head.result->body, "");
}

TEST(HttpTruncationTest, TruncatedIsRetryableOnlyWhileTheListSaysSo) {
  RawHttpServer server({kWhole.substr(0, kStatusLine + 5), kWhole});
  RetryOptions retry = FastRetry(3);
  retry.retryable_errors = {ErrorKind::kConnectionReset};
  auto client = MakeClient(retry);
  HttpCallInfo info;
  Result<HttpResponse> r = client->Send(Request(server, "GET"), &info);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(info.last_error, ErrorKind::kTruncated);
  EXPECT_EQ(info.stop_reason, StopReason::kTerminal);
  EXPECT_EQ(server.requests().size(), 1u);
}

// ---------------------------------------------------------------------------
// The async engine: the same cuts, the same verdicts

TEST(HttpTruncationTest, AsyncEngineRetriesCutGetsAndNeverRepeatsAnUnkeyedPost) {
  HttpClientOptions options;
  options.retry = FastRetry(3);
  auto engine = HttpAsyncEngine::Create(options);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  for (size_t n : {size_t{0}, size_t{5}, kStatusLine, kStatusLine + 20, kWholeHead.size() - 2,
                   kWholeHead.size(), kWhole.size() - 1}) {
    RawHttpServer get_server({kWhole.substr(0, n), kWhole});
    RawHttpServer post_server({kWhole.substr(0, n), kWhole});
    PollDriver driver(**engine);
    Result<uint64_t> get = (*engine)->Begin(Request(get_server, "GET"));
    Result<uint64_t> post = (*engine)->Begin(Request(post_server, "POST"));
    ASSERT_TRUE(get.ok() && post.ok());
    ASSERT_TRUE((*engine)->StartAttempt(*get).ok());
    ASSERT_TRUE((*engine)->StartAttempt(*post).ok());
    driver.Run(2);
    ASSERT_EQ(driver.done.size(), 2u) << "cut at " << n << ": calls still running";
    const Result<HttpResponse>& got = driver.done.at(*get);
    ASSERT_TRUE(got.ok()) << "cut at " << n << ": " << got.status().ToString();
    EXPECT_EQ(got->body, "hello");
    EXPECT_EQ(got->attempts, 2);
    EXPECT_EQ(get_server.requests().size(), 2u);
    const Result<HttpResponse>& posted = driver.done.at(*post);
    ASSERT_FALSE(posted.ok()) << "cut at " << n;
    EXPECT_EQ(driver.infos.at(*post).last_error, KindOfCut(n)) << n;
    EXPECT_EQ(driver.infos.at(*post).stop_reason, StopReason::kNotReplaySafe);
    EXPECT_EQ(post_server.requests().size(), 1u);
  }
}

}  // namespace
}  // namespace http_test
}  // namespace mulligan
