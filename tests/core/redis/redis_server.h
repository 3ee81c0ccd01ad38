// tests/core/redis/redis_server.h — a real redis-server for the Redis suites,
// started by the test on a free loopback port and stopped by PID.
//
//   RedisServer server;                  // nothing runs yet
//   Status s = server.Start();           // spawn, wait for PING (<= 5 s)
//   server.url();                        // "redis://127.0.0.1:<port>/0"
//   server.Stop();                       // SIGTERM, then SIGKILL; waitpid
//   server.Start();                      // again, on the same port
//
// The binary is $MULLIGAN_REDIS_SERVER when set (then its absence is a
// failure), else /usr/bin/redis-server (then its absence skips the suite:
// RedisServerPath() returns empty). It runs with no persistence
// (--save "" --appendonly no) unless `extra_args` asks for some.

#ifndef MULLIGAN_TESTS_CORE_REDIS_REDIS_SERVER_H_
#define MULLIGAN_TESTS_CORE_REDIS_REDIS_SERVER_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace mulligan {
namespace redis_test {

// The redis-server to run, or "" when none is installed and none is required.
// `required` is set when MULLIGAN_REDIS_SERVER names one.
inline std::string RedisServerPath(bool* required) {
  const char* env = std::getenv("MULLIGAN_REDIS_SERVER");
  *required = env != nullptr && *env != '\0';
  const std::string path = *required ? std::string(env) : std::string("/usr/bin/redis-server");
  if (access(path.c_str(), X_OK) != 0) return *required ? path : std::string();
  return path;
}

// A port that was free a moment ago (bind to 0, read it back, close).
inline int FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof(a);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  close(fd);
  return port;
}

// Sends PING on a fresh connection; true on "+PONG" (or "-NOAUTH", which
// also proves the server is up).
inline bool Ping(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  bool ok = false;
  timeval tv{0, 200000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      write(fd, "PING\r\n", 6) == 6) {
    char buf[16] = {0};
    const ssize_t n = read(fd, buf, sizeof(buf) - 1);
    ok = n > 0 && (std::string(buf, 5) == "+PONG" || std::string(buf, 7) == "-NOAUTH");
  }
  close(fd);
  return ok;
}

class RedisServer {
 public:
  RedisServer() = default;
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;
  ~RedisServer() { Stop(); }

  // Starts redis-server (on the previous port after a Stop, else a free one).
  // Returns "" on success, else what went wrong.
  //
  // A free port is only free until someone binds it: between
  // FreeLoopbackPort() and redis-server's own bind, another process (a
  // parallel test's server, or any outgoing connection's ephemeral port) may
  // take it, and redis-server exits at start. A first start then tries up to
  // 8 fresh ports, as tests/nginx/nginx_server.py does; a restart keeps its
  // port (the clients' URLs name it).
  std::string Start(const std::vector<std::string>& extra_args = {}) {
    if (!extra_args.empty()) extra_args_ = extra_args;
    if (port_ != 0) return StartOnce();
    std::string error;
    for (int tries = 0; tries < 8; ++tries) {
      port_ = FreeLoopbackPort();
      error = StartOnce();
      if (error.find("exited at start") == std::string::npos) return error;
    }
    return error;
  }

  // Kills the server (SIGKILL: as abrupt as a crash) and reaps it.
  void Stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }

  int port() const { return port_; }
  std::string url(int db = 0) const {
    return "redis://127.0.0.1:" + std::to_string(port_) + "/" + std::to_string(db);
  }

 private:
  // One start on port_: spawn, then wait for PING (<= 5 s).
  std::string StartOnce() {
    bool required = false;
    const std::string path = RedisServerPath(&required);
    if (path.empty()) return "no redis-server";
    std::vector<std::string> args = {path,          "--port", std::to_string(port_),
                                     "--bind",      "127.0.0.1", "--save", "",
                                     "--appendonly", "no", "--daemonize", "no",
                                     "--loglevel",  "warning", "--logfile", "",
                                     "--dir",       "/tmp"};
    args.insert(args.end(), extra_args_.begin(), extra_args_.end());
    pid_ = fork();
    if (pid_ == 0) {
      std::vector<char*> argv;
      for (auto& s : args) argv.push_back(s.data());
      argv.push_back(nullptr);
      // Quiet: redis-server's banner would clutter the test log.
      if (freopen("/dev/null", "w", stdout) == nullptr) _exit(126);
      execv(argv[0], argv.data());
      _exit(127);
    }
    if (pid_ < 0) return "fork failed";
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < until) {
      if (Ping(port_)) return "";
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return "redis-server " + path + " exited at start (port " + std::to_string(port_) + ")";
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    Stop();
    return "redis-server did not answer PING within 5 s";
  }

  pid_t pid_ = -1;
  int port_ = 0;
  std::vector<std::string> extra_args_;
};

}  // namespace redis_test
}  // namespace mulligan

#endif  // MULLIGAN_TESTS_CORE_REDIS_REDIS_SERVER_H_
