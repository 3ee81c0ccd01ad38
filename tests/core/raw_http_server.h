// tests/core/raw_http_server.h — a real TCP server on a free loopback port
// that answers each connection with scripted bytes, then closes it: the
// responses nginx cannot be made to send (a head cut before its empty line,
// a body shorter than its Content-Length, a lone 1xx, HTTP/0.9).
//
// Connection i (0-based) reads one request (its head, and as many body bytes
// as its Content-Length says), records it, writes replies[min(i, n - 1)]
// and closes. One request per connection: a reply meant to be whole carries
// "Connection: close", so libcurl never tries to reuse the socket.
//
// Thread-safety: the server's thread serves; requests() may be read from
// any thread (it locks).

#ifndef MULLIGAN_TESTS_CORE_RAW_HTTP_SERVER_H_
#define MULLIGAN_TESTS_CORE_RAW_HTTP_SERVER_H_

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace mulligan {
namespace http_test {

class RawHttpServer {
 public:
  // What one connection sent.
  struct Request {
    std::string method;
    std::string idempotency_key;  // empty when the request had none
  };

  // Starts listening; `replies` are written in order, the last one again
  // for every later connection.
  explicit RawHttpServer(std::vector<std::string> replies) : replies_(std::move(replies)) {
    listener_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    listen(listener_, 16);
    socklen_t len = sizeof addr;
    getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }

  // Not copyable or movable: the serving thread points at this object.
  RawHttpServer(const RawHttpServer&) = delete;
  RawHttpServer& operator=(const RawHttpServer&) = delete;

  ~RawHttpServer() {
    stop_ = true;
    thread_.join();
    close(listener_);
  }

  std::string Url(const std::string& path = "/") const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }

  std::vector<Request> requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

 private:
  void Serve() {
    size_t served = 0;
    while (!stop_) {
      pollfd p{listener_, POLLIN, 0};
      if (poll(&p, 1, 5) <= 0) continue;
      const int fd = accept(listener_, nullptr, nullptr);
      if (fd < 0) continue;
      if (ReadRequest(fd)) {
        const std::string& reply = replies_[std::min(served, replies_.size() - 1)];
        size_t off = 0;
        while (off < reply.size()) {
          const ssize_t n = send(fd, reply.data() + off, reply.size() - off, MSG_NOSIGNAL);
          if (n <= 0) break;
          off += static_cast<size_t>(n);
        }
        ++served;
      }
      shutdown(fd, SHUT_WR);
      // Drain what the client still sends, so that close() sends a FIN and
      // not a reset (unread data at close makes the kernel reset).
      char sink[512];
      pollfd c{fd, POLLIN, 0};
      while (poll(&c, 1, 200) > 0 && recv(fd, sink, sizeof sink, 0) > 0) {
      }
      close(fd);
    }
  }

  // Reads one request; false when the client went away first.
  bool ReadRequest(int fd) {
    std::string data;
    char buf[4096];
    size_t head_end = std::string::npos;
    size_t body = 0;
    while (true) {
      if (head_end == std::string::npos) {
        head_end = data.find("\r\n\r\n");
        if (head_end != std::string::npos) body = ContentLength(data.substr(0, head_end));
      }
      if (head_end != std::string::npos && data.size() >= head_end + 4 + body) break;
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 5000) <= 0) return false;
      const ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return false;
      data.append(buf, static_cast<size_t>(n));
    }
    Request r;
    r.method = data.substr(0, data.find(' '));
    r.idempotency_key = Field(data.substr(0, head_end), "idempotency-key");
    std::lock_guard<std::mutex> lock(mu_);
    requests_.push_back(std::move(r));
    return true;
  }

  static std::string Lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  }

  // The value of field `name` (lower case) in `head`, or "".
  static std::string Field(const std::string& head, const std::string& name) {
    const std::string lower = Lower(head);
    const size_t at = lower.find("\r\n" + name + ":");
    if (at == std::string::npos) return "";
    size_t start = at + 2 + name.size() + 1;
    while (start < head.size() && head[start] == ' ') ++start;
    return head.substr(start, head.find("\r\n", start) - start);
  }

  static size_t ContentLength(const std::string& head) {
    const std::string value = Field(head, "content-length");
    return value.empty() ? 0 : std::stoul(value);
  }

  std::vector<std::string> replies_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::vector<Request> requests_;
  std::thread thread_;
};

}  // namespace http_test
}  // namespace mulligan

#endif  // MULLIGAN_TESTS_CORE_RAW_HTTP_SERVER_H_
