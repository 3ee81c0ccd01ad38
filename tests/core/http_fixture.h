// tests/core/http_fixture.h — what the HTTP suites (http_client_test.cc,
// http_async_test.cc, http_vectors_test.cc) share: the real nginx they talk
// to, its access log, request and client helpers, and a poll(2) driver of
// HttpAsyncEngine.
//
// A gtest Environment (registered once, in http_fixture.cc) starts
// tests/nginx/nginx_server.py (`serve`) through popen(..., "w"): the launcher
// writes its port to a file, and pclose() closes its stdin, which stops nginx
// (so does a crash of this process). Tests read nginx's JSON access log
// (tests/nginx/nginx.conf.in) to check what really reached the server: how
// many attempts, which Idempotency-Key, when each request started and on
// which connection.

#ifndef MULLIGAN_TESTS_CORE_HTTP_FIXTURE_H_
#define MULLIGAN_TESTS_CORE_HTTP_FIXTURE_H_

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "mulligan/http/async_engine.h"
#include "mulligan/http/client.h"
#include "mulligan/telemetry/metrics.h"

namespace mulligan {
namespace http_test {

using std::chrono::milliseconds;
using std::chrono::seconds;

// ---------------------------------------------------------------------------
// The nginx server

struct Server {
  FILE* launcher = nullptr;
  int port = 0;
  std::string workdir;
  std::string access_log;
  std::string base_url;
};
inline Server g_server;


class NginxEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    // A proxy from the environment must not sit between us and 127.0.0.1.
    setenv("NO_PROXY", "127.0.0.1,localhost", 1);
    setenv("no_proxy", "127.0.0.1,localhost", 1);

    char tmpl[] = "/tmp/mulligan-http-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr) << "mkdtemp failed";
    root_ = tmpl;
    g_server.workdir = root_ + "/nginx";
    g_server.access_log = g_server.workdir + "/logs/access.log";
    const std::string port_file = root_ + "/port";
    const std::string cmd = std::string("'") + MULLIGAN_PYTHON + "' '" + MULLIGAN_TESTS_DIR +
                            "/nginx/nginx_server.py' serve --port-file '" + port_file +
                            "' --workdir '" + g_server.workdir + "'";
    g_server.launcher = popen(cmd.c_str(), "w");
    ASSERT_NE(g_server.launcher, nullptr) << "cannot run: " << cmd;

    const auto give_up = std::chrono::steady_clock::now() + seconds(20);
    while (std::chrono::steady_clock::now() < give_up) {
      std::ifstream in(port_file);
      int port = 0;
      if (in >> port && port > 0) {
        g_server.port = port;
        break;
      }
      std::this_thread::sleep_for(milliseconds(20));
    }
    ASSERT_GT(g_server.port, 0) << "nginx did not start; command: " << cmd;
    g_server.base_url = "http://127.0.0.1:" + std::to_string(g_server.port);
    // nginx logs the launcher's start-up probe after answering it: wait for
    // that line, so that it cannot land after the first test cleared the log.
    const std::string log = g_server.workdir + "/logs/access.log";
    const auto probe_give_up = std::chrono::steady_clock::now() + seconds(2);
    while (std::chrono::steady_clock::now() < probe_give_up) {
      std::ifstream in(log);
      std::string line;
      if (std::getline(in, line) && !line.empty() && line.back() == '}') break;
      std::this_thread::sleep_for(milliseconds(5));
    }
  }

  void TearDown() override {
    if (g_server.launcher != nullptr) {
      pclose(g_server.launcher);  // end of stdin: the launcher stops nginx
      g_server.launcher = nullptr;
    }
    if (!root_.empty()) {
      std::string rm = "rm -rf '" + root_ + "'";
      if (std::system(rm.c_str()) != 0) std::fprintf(stderr, "could not remove %s\n", root_.c_str());
    }
  }

 private:
  std::string root_;
};


inline std::string Url(const std::string& path) { return g_server.base_url + path; }

// ---------------------------------------------------------------------------
// The access log: one flat JSON object per line, every value a string.

struct LogEntry {
  int64_t msec = 0;   // when nginx logged the finished request, ms since the epoch
  int64_t start = 0;  // when nginx started reading it (msec - request_time), ms
  std::string method;
  std::string uri;
  int status = 0;
  std::string idempotency_key;
  std::string request_id;
  std::string traceparent;  // the request's traceparent header ("" when none)
  long connection = 0;
  long connection_requests = 0;
};

inline std::optional<std::string> JsonField(const std::string& line, const std::string& key) {
  const std::string needle = "\"" + key + "\":\"";
  size_t pos = line.find(needle);
  if (pos == std::string::npos) return std::nullopt;
  pos += needle.size();
  std::string out;
  for (; pos < line.size(); ++pos) {
    char c = line[pos];
    if (c == '"') return out;
    if (c == '\\' && pos + 1 < line.size()) {
      c = line[++pos];
      if (c == 'n') c = '\n';
      if (c == 'r') c = '\r';
      if (c == 't') c = '\t';
    }
    out += c;
  }
  return std::nullopt;  // a line still being written
}

// "1796012297.125" -> 1796012297125 (nginx prints exactly 3 decimals).
inline int64_t Millis(const std::string& s) {
  size_t dot = s.find('.');
  std::string whole = s.substr(0, dot);
  std::string frac = dot == std::string::npos ? "" : s.substr(dot + 1);
  frac = (frac + "000").substr(0, 3);
  return std::stoll(whole) * 1000 + std::stoll(frac);
}

inline std::vector<LogEntry> ReadLog() {
  std::vector<LogEntry> entries;
  std::ifstream in(g_server.access_log);
  std::string line;
  while (std::getline(in, line)) {
    auto msec = JsonField(line, "msec");
    auto request_time = JsonField(line, "request_time");
    auto status = JsonField(line, "status");
    auto connection_requests = JsonField(line, "connection_requests");
    if (!msec || !request_time || !status || !connection_requests) continue;
    LogEntry e;
    e.msec = Millis(*msec);
    e.start = e.msec - Millis(*request_time);
    e.method = JsonField(line, "method").value_or("");
    e.uri = JsonField(line, "uri").value_or("");
    e.status = std::stoi(*status);
    e.idempotency_key = JsonField(line, "idempotency_key").value_or("");
    e.request_id = JsonField(line, "request_id").value_or("");
    e.traceparent = JsonField(line, "traceparent").value_or("");
    e.connection = std::stol(JsonField(line, "connection").value_or("0"));
    e.connection_requests = std::stol(*connection_requests);
    entries.push_back(std::move(e));
  }
  return entries;
}

inline void ClearLog() { std::ofstream(g_server.access_log, std::ios::trunc); }

// nginx writes a request's line just after sending the response, so a test
// that has just read the response polls briefly, and waits a little longer
// when it must show that no further line appears.
inline std::vector<LogEntry> LogWithCount(size_t expected) {
  const auto give_up = std::chrono::steady_clock::now() + seconds(2);
  std::vector<LogEntry> entries = ReadLog();
  while (entries.size() < expected && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(milliseconds(5));
    entries = ReadLog();
  }
  std::this_thread::sleep_for(milliseconds(50));
  return ReadLog();
}

// ---------------------------------------------------------------------------
// Helpers

inline RetryOptions FastRetry(int attempts) {
  RetryOptions retry;
  retry.max_attempts = attempts;
  retry.backoff.kind = BackoffKind::kConstant;
  retry.backoff.base = milliseconds(1);
  retry.backoff.jitter = JitterKind::kNone;
  return retry;
}

inline std::unique_ptr<HttpClient> MakeClient(const RetryOptions& retry, Clock* clock = nullptr) {
  HttpClientOptions options;
  options.retry = retry;
  options.clock = clock;
  Result<std::unique_ptr<HttpClient>> client = HttpClient::Create(options);
  EXPECT_TRUE(client.ok()) << client.status().ToString();
  return client.ok() ? std::move(client).value() : nullptr;
}

inline HttpRequest Get(const std::string& path) {
  HttpRequest request;
  request.url = Url(path);
  return request;
}

inline HttpRequest Post(const std::string& path, std::string body = "payload") {
  HttpRequest request;
  request.method = "POST";
  request.url = Url(path);
  request.body = std::move(body);
  return request;
}

// A loopback port with nothing listening on it.
inline int ClosedPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

class HttpClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_GT(g_server.port, 0) << "the nginx test server is not running";
    ClearLog();
  }
};

// Drives an HttpAsyncEngine with poll(2), as an event loop would. With a
// fake clock, a retry's wait advances that clock and the next attempt starts
// at once (the waits of each call are kept in `waits`); otherwise the driver
// waits for real.
struct PollDriver {
  explicit PollDriver(HttpAsyncEngine& e, FakeClock* fake_clock = nullptr)
      : engine(e), fake(fake_clock) {}
  HttpAsyncEngine& engine;
  FakeClock* fake;
  std::map<int, int> watches;
  std::optional<std::chrono::steady_clock::time_point> timer;
  std::multimap<std::chrono::steady_clock::time_point, uint64_t> retries;
  std::map<uint64_t, Result<HttpResponse>> done;
  std::map<uint64_t, HttpCallInfo> infos;
  std::map<uint64_t, std::vector<Duration>> waits;
  int retried = 0;

  void Apply() {
    for (const auto& w : engine.TakeSocketChanges()) {
      if (w.events <= 0) {  // 0: not watched any more; -1: closed
        watches.erase(w.fd);
      } else {
        watches[w.fd] = w.events;
      }
    }
    if (std::optional<long> t = engine.TakeTimerChange()) {
      if (*t < 0) {
        timer.reset();
      } else {
        timer = std::chrono::steady_clock::now() + milliseconds(*t);
      }
    }
    for (const auto& e : engine.TakeEvents()) {
      if (e.retry) {
        ++retried;
        waits[e.id].push_back(e.decision.delay);
        if (fake != nullptr) {
          fake->Advance(e.decision.delay);
          retries.emplace(std::chrono::steady_clock::now(), e.id);
        } else {
          retries.emplace(std::chrono::steady_clock::now() + e.decision.delay, e.id);
        }
      } else {
        done.emplace(e.id, engine.Finish(e.id, &infos[e.id]));
      }
    }
  }

  void Run(size_t calls) {
    const auto give_up = std::chrono::steady_clock::now() + seconds(20);
    while (done.size() < calls && std::chrono::steady_clock::now() < give_up) {
      Apply();
      auto now = std::chrono::steady_clock::now();
      while (!retries.empty() && retries.begin()->first <= now) {
        ASSERT_TRUE(engine.StartAttempt(retries.begin()->second).ok());
        retries.erase(retries.begin());
      }
      Apply();
      if (done.size() >= calls) break;
      auto wake = now + milliseconds(100);
      if (!retries.empty() && retries.begin()->first < wake) wake = retries.begin()->first;
      PollOnce(wake);
    }
  }

  // Runs the engine until the attempt of call `id` in flight ends: its
  // retry is decided (then dropped from `retries`: the caller starts the
  // next attempt itself) or the call is done.
  void RunUntilAttemptEnds(uint64_t id) {
    const auto give_up = std::chrono::steady_clock::now() + seconds(20);
    const auto pending = [&] {
      for (const auto& [at, r] : retries) {
        if (r == id) return true;
      }
      return false;
    };
    while (!pending() && done.count(id) == 0 && std::chrono::steady_clock::now() < give_up) {
      Apply();
      if (pending() || done.count(id) != 0) break;
      PollOnce(std::chrono::steady_clock::now() + milliseconds(100));
    }
    for (auto it = retries.begin(); it != retries.end();) {
      it = it->second == id ? retries.erase(it) : std::next(it);
    }
  }

  // One poll of the watched sockets until `wake` at the latest (or the
  // engine's timer), then the socket actions it calls for.
  void PollOnce(std::chrono::steady_clock::time_point wake) {
    const auto now = std::chrono::steady_clock::now();
    if (timer && *timer < wake) wake = *timer;
    std::vector<pollfd> fds;
    for (const auto& [fd, ev] : watches) {
      pollfd p{};
      p.fd = fd;
      p.events = static_cast<short>(((ev & HttpAsyncEngine::kRead) ? POLLIN : 0) |
                                    ((ev & HttpAsyncEngine::kWrite) ? POLLOUT : 0));
      fds.push_back(p);
    }
    const auto wait = std::chrono::duration_cast<milliseconds>(wake - now).count();
    poll(fds.data(), fds.size(), static_cast<int>(std::max<long long>(0, wait)));
    for (const auto& p : fds) {
      int ev = 0;
      if (p.revents & (POLLIN | POLLERR | POLLHUP)) ev |= HttpAsyncEngine::kRead;
      if (p.revents & POLLOUT) ev |= HttpAsyncEngine::kWrite;
      if (ev != 0) engine.SocketAction(p.fd, ev);
    }
    if (timer && std::chrono::steady_clock::now() >= *timer) {
      timer.reset();
      engine.SocketAction(-1, 0);
    }
  }
};

}  // namespace http_test
}  // namespace mulligan

#endif  // MULLIGAN_TESTS_CORE_HTTP_FIXTURE_H_
