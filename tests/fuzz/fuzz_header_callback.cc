// tests/fuzz/fuzz_header_callback.cc — libFuzzer harness of the response-header
// callback, WriteHeader (core/src/http/transfer.h), and of the Retry-After
// value the client then reads from its fields (exchange.cc: FindHeader, then
// ParseRetryAfter).
//
// Input: byte 0 holds flags, the rest is the bytes of a response.
//   bit 0  raw: the bytes go to the callback in pieces of 1 to 16 bytes (the
//          length is bits 4-7 of the flags, plus one), ignoring line ends;
//          only the checks that hold for any bytes are made
//   bit 1  `now` is the next 8 bytes (any int64 nanoseconds since the epoch),
//          else 2024-01-01T00:00:00Z (the FakeClock's wall start)
// Otherwise the bytes are split into lines as libcurl (7.88) delivers them:
// each line up to and with its LF; the unfinished last line never arrives (a
// connection cut inside a line). The harness reads the lines as libcurl does,
// by position, and stops where libcurl would fail the transfer:
//   - a head begins with a status line: "HTTP/" in any case, a version, SP
//     and a three-digit code (at the start, after an interim 1xx head, and,
//     after the final head, for the next response of a redirect or a proxy's
//     CONNECT); any other line there ends the transfer (HTTP/0.9 refused);
//   - in a head, a line that begins with CR or LF ends it; a line that begins
//     with SP or HTAB continues the previous field (obs-fold, RFC 9112
//     section 5.2); "name: value" is a field; a line with no colon, or with
//     an empty name, is ignored;
//   - after the final head, lines are trailer fields of a chunked body
//     (libcurl does not hand over the empty line that ends the trailers).
// Post-conditions, after every line handed over (the fields in full, and the
// Retry-After delay, when a head ends and at the cut):
//   - the callback returns the size it was given (every byte consumed) and
//     no allocation failed;
//   - head_complete is true exactly when the latest head's ending line came;
//     so a transfer cut inside a final head, which libcurl ends with
//     CURLE_OK, is never a whole response (the verdict of Exchange);
//   - the fields are exactly the latest head's (an interim head's dropped),
//     then its trailers: names as sent, values without OWS around them,
//     continuations joined with one SP;
//   - the Retry-After delay, when the field parses, is never negative, and
//     a delay-seconds value of at most 18 digits is exactly that many seconds.
// In raw mode: the return value and no failed allocation; every field has a
// non-empty name without ':', a value without OWS, CR or LF at its ends;
// a piece that ends with LF and begins with CR or LF completes the head;
// at the end, a Retry-After delay is never negative.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "fuzz_check.h"
#include "http/transfer.h"
#include "mulligan/http/client.h"
#include "mulligan/retry/retry_after.h"

namespace {

using mulligan::Duration;
using mulligan::HttpHeaders;
using mulligan::WallTime;
using mulligan::internal::Transfer;
using mulligan_fuzz::Printable;

constexpr int64_t kDefaultNowSeconds = 1704067200;  // 2024-01-01T00:00:00Z
constexpr size_t kMaxLines = 512;

bool IsOws(char c) { return c == ' ' || c == '\t'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsOws(s.front())) s.remove_prefix(1);
  while (!s.empty() && (IsOws(s.back()) || s.back() == '\r' || s.back() == '\n')) s.remove_suffix(1);
  return s;
}

bool StartsWithHttpSlash(std::string_view line) {
  if (line.size() < 5) return false;
  const char* want = "http/";
  for (size_t i = 0; i < 5; ++i) {
    char c = line[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != want[i]) return false;
  }
  return true;
}

// The code libcurl reads from a status line: the three digits after the
// version ("HTTP/1.1 503 ...", "HTTP/2 200"); 200 when "HTTP/" is not in
// upper case (libcurl's version parse fails, its case-insensitive prefix
// check passes, and it takes the line as HTTP/1.0 200); -1 when the line is
// no status line, or has no three-digit code (libcurl's reading of those
// varies, so the harness stops before them).
int StatusCode(std::string_view line) {
  if (!StartsWithHttpSlash(line)) return -1;
  if (line.substr(0, 5) != "HTTP/") return 200;
  const size_t space = line.find(' ');
  if (space == std::string_view::npos || line.size() < space + 4) return -1;
  int code = 0;
  for (size_t i = space + 1; i < space + 4; ++i) {
    if (line[i] < '0' || line[i] > '9') return -1;
    code = code * 10 + (line[i] - '0');
  }
  const char after = line.size() > space + 4 ? line[space + 4] : '\n';
  if (after >= '0' && after <= '9') return -1;
  return code >= 100 ? code : -1;
}

std::string Render(const HttpHeaders& headers) {
  std::string out = "[";
  for (const auto& [name, value] : headers) out += Printable(name) + ": " + Printable(value) + ", ";
  return out + "]";
}

// What libcurl's reading of the lines says the callback must have collected.
struct Model {
  enum class State { kHeadStart, kInHead, kAfterFinal, kStopped };
  State state = State::kHeadStart;
  bool ended = false;  // the latest head's ending line came
  int status = 0;      // the latest status line's code
  HttpHeaders fields;

  // Takes `line` as libcurl would; false when libcurl would have failed the
  // transfer before handing it over (nothing more arrives).
  bool Take(std::string_view line) {
    const bool head_start =
        state == State::kHeadStart || (state == State::kAfterFinal && StartsWithHttpSlash(line));
    if (head_start) {
      const int code = StatusCode(line);
      if (code < 0) {
        state = State::kStopped;
        return false;
      }
      status = code;
      ended = false;
      fields.clear();
      state = State::kInHead;
      return true;
    }
    const bool ends = line.front() == '\r' || line.front() == '\n';
    if (state == State::kAfterFinal && ends) {
      state = State::kStopped;  // the trailers' end: libcurl keeps it
      return false;
    }
    if (state == State::kInHead && ends) {
      ended = true;
      state = status < 200 ? State::kHeadStart : State::kAfterFinal;
      return true;
    }
    if (IsOws(line.front())) {
      const std::string_view more = Trim(line);
      if (!fields.empty() && !more.empty()) {
        std::string& value = fields.back().second;
        if (!value.empty()) value += ' ';
        value.append(more.data(), more.size());
      }
      return true;
    }
    const size_t colon = line.find(':');
    if (colon != std::string_view::npos && colon > 0) {
      fields.emplace_back(std::string(line.substr(0, colon)), std::string(Trim(line.substr(colon + 1))));
    }
    return true;
  }
};

// The Retry-After post-condition on the fields the callback collected.
void CheckRetryAfter(const HttpHeaders& headers, WallTime now) {
  const std::optional<std::string> value = mulligan::FindHeader(headers, "Retry-After");
  if (!value) return;
  const std::optional<Duration> delay = mulligan::ParseRetryAfter(*value, now);
  if (!delay) return;
  FUZZ_CHECK(*delay >= Duration::zero(),
             "negative Retry-After delay " + std::to_string(delay->count()) + " ns for " +
                 Printable(*value));
  const std::string_view digits = Trim(*value);
  if (digits.empty() || digits.size() > 18) return;
  int64_t seconds = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return;
    seconds = seconds * 10 + (c - '0');
  }
  // Past the clock's range (about 292 years) the delay saturates.
  constexpr int64_t kMaxSeconds = Duration::max().count() / 1000000000;
  const Duration expected =
      seconds > kMaxSeconds ? Duration::max() : Duration(std::chrono::seconds(seconds));
  FUZZ_CHECK(*delay == expected,
             "Retry-After " + Printable(*value) + " gave " + std::to_string(delay->count()) + " ns");
}

size_t Feed(Transfer& t, std::string_view piece) {
  std::string copy(piece);  // the callback gets a char*, as from libcurl
  const size_t got = mulligan::internal::WriteHeader(copy.data(), 1, copy.size(), &t);
  FUZZ_CHECK(got == piece.size(), "returned " + std::to_string(got) + " for " + Printable(piece));
  FUZZ_CHECK(!t.failed_alloc, "an allocation failed on " + Printable(piece));
  return got;
}

void RunLines(std::string_view bytes, WallTime now) {
  Transfer t;
  Model model;
  size_t lines = 0;
  while (lines++ < kMaxLines) {
    const size_t lf = bytes.find('\n');
    if (lf == std::string_view::npos) break;  // a cut line never arrives
    const std::string_view line = bytes.substr(0, lf + 1);
    bytes.remove_prefix(lf + 1);
    const bool was_ended = model.ended;
    if (!model.Take(line)) break;
    Feed(t, line);
    FUZZ_CHECK(t.head_complete == model.ended,
               std::string("head_complete is ") + (t.head_complete ? "true" : "false") +
                   " after " + Printable(line));
    // A line changes at most the last field (or drops them all): the count
    // and the last field after every line; all of them, and the Retry-After
    // delay, when a head ends and at the cut (checking all after every line
    // made long inputs quadratic and the fuzzer 3 times slower).
    const bool head_ended = model.ended && !was_ended;
    const bool same = head_ended ? t.headers == model.fields
                                 : t.headers.size() == model.fields.size() &&
                                       (t.headers.empty() || t.headers.back() == model.fields.back());
    FUZZ_CHECK(same, "fields " + Render(t.headers) + ", expected " + Render(model.fields) +
                         " after " + Printable(line));
    if (head_ended) CheckRetryAfter(t.headers, now);
  }
  FUZZ_CHECK(t.headers == model.fields,
             "fields " + Render(t.headers) + ", expected " + Render(model.fields) + " at the cut");
  CheckRetryAfter(t.headers, now);
  // The cut falls here: Exchange's verdict (a final status and a whole head)
  // must be the model's.
  const bool whole = model.status >= 200 && t.head_complete;
  FUZZ_CHECK(whole == (model.status >= 200 && model.ended),
             "a response cut inside its final head would count as whole");
}

void CheckField(const std::pair<std::string, std::string>& field) {
  const auto& [name, value] = field;
  FUZZ_CHECK(!name.empty() && name.find(':') == std::string::npos, "bad name " + Printable(name));
  FUZZ_CHECK(value.empty() || (!IsOws(value.front()) && Trim(value).size() == value.size()),
             "untrimmed value " + Printable(value));
}

void RunRaw(std::string_view bytes, size_t piece_size, WallTime now) {
  Transfer t;
  while (!bytes.empty()) {
    const std::string_view piece = bytes.substr(0, piece_size);
    bytes.remove_prefix(piece.size());
    Feed(t, piece);
    if (piece.back() == '\n' && (piece.front() == '\r' || piece.front() == '\n')) {
      FUZZ_CHECK(t.head_complete, "an empty line did not end the head: " + Printable(piece));
    }
    // A piece changes at most the last field: that one after every piece,
    // all of them at the end.
    if (!t.headers.empty()) CheckField(t.headers.back());
  }
  for (const auto& field : t.headers) CheckField(field);
  CheckRetryAfter(t.headers, now);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  mulligan_fuzz::Input in(data, size);
  const uint8_t flags = in.Byte();
  const WallTime now = (flags & 2) ? WallTime(std::chrono::nanoseconds(static_cast<int64_t>(in.U64())))
                                   : WallTime(std::chrono::seconds(kDefaultNowSeconds));
  const std::string_view bytes = in.Rest();
  if (flags & 1) {
    RunRaw(bytes, static_cast<size_t>(flags >> 4) + 1, now);
  } else {
    RunLines(bytes, now);
  }
  return 0;
}
