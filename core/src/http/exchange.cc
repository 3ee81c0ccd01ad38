// core/src/http/exchange.cc — one logical HTTP call over the pipeline: the
// request prepared once, each attempt's transfer set up and read, its
// Outcome handed to the pipeline's Call, and the call's result built.

#include "exchange.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "curl_global.h"
#include "internal/ascii.h"
#include "mulligan/http/redact.h"
#include "mulligan/retry/retry_after.h"
#include "mulligan/telemetry/metrics.h"

namespace mulligan {
inline namespace v0 {
namespace internal {

// ---------------------------------------------------------------------------
// Settings

namespace {

Status ValidateOptions(const HttpClientOptions& options) {
  if (options.attempt_timeout <= Duration::zero()) {
    return InvalidArgumentError("attempt_timeout must be > 0, got " +
                                std::to_string(options.attempt_timeout.count()) + " ns");
  }
  if (options.connect_timeout <= Duration::zero()) {
    return InvalidArgumentError("connect_timeout must be > 0, got " +
                                std::to_string(options.connect_timeout.count()) + " ns");
  }
  if (!IsSafeFieldValue(options.user_agent)) {
    return InvalidArgumentError("user_agent must not contain CR, LF or NUL");
  }
  if (options.max_redirects < 0 || options.max_redirects > 1000) {
    return InvalidArgumentError("max_redirects must be in [0, 1000], got " +
                                std::to_string(options.max_redirects));
  }
  if (options.ca_bundle.find('\0') != std::string::npos) {
    return InvalidArgumentError("ca_bundle must not contain NUL");
  }
  // libcurl would only fail at the first TLS handshake, as a transport
  // error; a bundle that cannot be read is a configuration mistake.
  if (!options.ca_bundle.empty() && ::access(options.ca_bundle.c_str(), R_OK) != 0) {
    const int error = errno;
    return InvalidArgumentError("ca_bundle \"" + options.ca_bundle +
                                "\" cannot be read: " + std::strerror(error));
  }
  if (options.method_rule < HttpMethodRule::kIdempotent ||
      options.method_rule > HttpMethodRule::kAllowed) {
    return InvalidArgumentError("method_rule " +
                                std::to_string(static_cast<int>(options.method_rule)) +
                                " is not a known HttpMethodRule");
  }
  if (options.allowed_methods.size() > 64) {
    return InvalidArgumentError("allowed_methods holds at most 64 methods, got " +
                                std::to_string(options.allowed_methods.size()));
  }
  for (const std::string& m : options.allowed_methods) {
    if (!IsToken(m)) {
      return InvalidArgumentError("allowed_methods must hold HTTP methods (tokens), got \"" + m +
                                  "\"");
    }
  }
  if (options.max_connections < 0) {
    return InvalidArgumentError("max_connections must be >= 0 (0: no cap), got " +
                                std::to_string(options.max_connections));
  }
  if (options.retry_budget && !options.shared_budget) {
    Status budget = ValidateBudgetOptions(*options.retry_budget);
    if (!budget.ok()) return InvalidArgumentError("retry_budget: " + budget.message());
  }
  return ValidateBreakerKey(options.breaker_key);
}

// The pipeline of a client: its default policy, its breakers by origin, and
// its metrics (one name, or one per origin).
Pipeline::Parts PartsFor(const HttpClientOptions& options, const RetryPolicy& policy,
                         Clock* clock) {
  Pipeline::Parts parts;
  parts.policy = &policy;
  parts.breakers = options.breakers.get();
  parts.breaker_per_attempt = options.breaker_per_attempt;
  parts.clock = clock;
  parts.budget = options.shared_budget.get();
  parts.throttle = options.throttle.get();
  parts.bulkhead = options.bulkhead.get();
  parts.rate_limiter = options.rate_limiter.get();
  parts.rate_limit_per_attempt = options.rate_limit_per_attempt;
  parts.adaptive_rate = options.adaptive_rate.get();
  if (options.report_metrics) {
    if (options.metrics_name.empty()) {
      parts.metrics_registry = &MetricsRegistry::Default();
    } else {
      parts.metrics = MetricsRegistry::Default().Get(options.metrics_name);
    }
  }
  return parts;
}

Pipeline::Parts WithBudget(Pipeline::Parts parts, RetryBudget* budget) {
  parts.budget = budget;
  return parts;
}

// The connection cap: a FIFO bulkhead whose queue never refuses (the calling
// threads bound it).
std::shared_ptr<Bulkhead> ConnectionCap(int max_connections) {
  if (max_connections <= 0) return nullptr;
  BulkheadOptions cap;
  cap.name = "max_connections";
  cap.max_concurrent = max_connections;
  cap.max_queue = 1 << 30;
  Result<std::shared_ptr<Bulkhead>> made = Bulkhead::Create(cap);
  return made.ok() ? std::move(made).value() : nullptr;
}

}  // namespace

OriginPipeline::OriginPipeline(const Pipeline::Parts& parts, std::shared_ptr<RetryBudget> b)
    : budget(std::move(b)), pipeline(WithBudget(parts, budget.get())) {}

Settings::Settings(const HttpClientOptions& opts, RetryPolicy pol)
    : options(opts),
      policy(std::move(pol)),
      clock(opts.clock != nullptr ? opts.clock : SystemClock::Default()),
      proxy_from_env(ProxyFromEnvironment()),
      metrics_by_origin(opts.report_metrics && opts.metrics_name.empty()),
      per_origin_budget(opts.retry_budget.has_value() && !opts.shared_budget),
      pipeline(PartsFor(options, policy, clock)),
      connections(ConnectionCap(opts.max_connections)) {}

const OriginPipeline& Settings::OriginFor(std::string_view origin) const {
  std::lock_guard<std::mutex> lock(origins_mu_);
  auto it = origins_.find(std::string(origin));
  if (it != origins_.end()) return *it->second;
  const bool overflow = origins_.size() >= kMaxBudgetOrigins;
  if (overflow && overflow_) return *overflow_;
  BudgetOptions budget = *options.retry_budget;
  const std::string label = overflow ? std::string("*") : std::string(origin);
  budget.name = budget.name.empty() ? label : budget.name + " " + label;
  if (budget.clock == nullptr) budget.clock = clock;
  // Validated with the options: Create cannot fail here.
  std::shared_ptr<RetryBudget> made = RetryBudget::Create(budget).value();
  auto entry =
      std::make_unique<OriginPipeline>(PartsFor(options, policy, clock), std::move(made));
  if (overflow) {
    overflow_ = std::move(entry);
    return *overflow_;
  }
  return *origins_.emplace(std::string(origin), std::move(entry)).first->second;
}

const Pipeline& Settings::PipelineFor(std::string_view origin) const {
  if (!per_origin_budget) return pipeline;
  return OriginFor(origin).pipeline;
}

std::shared_ptr<RetryBudget> Settings::BudgetFor(std::string_view origin) const {
  if (!per_origin_budget) return options.shared_budget;
  return OriginFor(origin).budget;
}

Result<std::unique_ptr<Settings>> MakeSettings(const HttpClientOptions& options) {
  Result<RetryPolicy> policy = RetryPolicy::Create(options.retry);
  if (!policy.ok()) return policy.status();
  Status valid = ValidateOptions(options);
  if (!valid.ok()) return valid;
  std::shared_ptr<HedgingPolicy> hedging;
  if (options.hedging.has_value()) {
    Result<std::shared_ptr<HedgingPolicy>> made = HedgingPolicy::Create(*options.hedging);
    if (!made.ok()) return made.status();
    hedging = std::move(made).value();
  }
  if (!EnsureCurlGlobalInit()) return InternalError("curl_global_init failed");
  auto settings = std::make_unique<Settings>(options, std::move(policy).value());
  settings->hedging = std::move(hedging);
  return settings;
}

// ---------------------------------------------------------------------------
// Exchange

Status Exchange::Init(const Settings& settings, const HttpRequest& request, bool abortable) {
  settings_ = &settings;
  request_ = &request;
  Status valid = ValidateRequest(request, &url_);
  if (!valid.ok()) return valid;
  // What libcurl writes besides these (request line, Host, Accept, the
  // framing fields) is small; kMaxRequestHeadBytes leaves it ample room.
  size_t head = request.url.size() + settings.options.user_agent.size() + 16;
  for (const auto& [name, value] : request.headers) head += name.size() + value.size() + 4;
  if (request.idempotency_key) head += request.idempotency_key->size() + 19;
  if (head > kMaxRequestHeadBytes) {
    return InvalidArgumentError("request head too large: the URL and header fields take " +
                                std::to_string(head) + " bytes, more than the limit of " +
                                std::to_string(kMaxRequestHeadBytes));
  }
  if (abortable) {
    if (request.should_abort) {
      abort_ = &request.should_abort;
    } else if (settings.options.should_abort) {
      abort_ = &settings.options.should_abort;
    }
  }
  if (request.max_redirects && (*request.max_redirects < 0 || *request.max_redirects > 1000)) {
    return InvalidArgumentError("max_redirects must be in [0, 1000], got " +
                                std::to_string(*request.max_redirects));
  }
  clock_ = request.clock != nullptr ? request.clock : settings.clock;
  follow_redirects_ = request.follow_redirects.value_or(settings.options.follow_redirects);
  max_redirects_ = request.max_redirects.value_or(settings.options.max_redirects);

  // The header list is the same on every attempt (the same Idempotency-Key
  // above all), so it is built once.
  bool has_content_type = false;
  bool has_expect = false;
  for (const auto& [name, value] : request.headers) {
    // "Name;" is libcurl's spelling of a header with an empty value.
    if (!SlistAppend(headers_, value.empty() ? name + ";" : name + ": " + value)) {
      return Status(StatusCode::kNoMemory, "curl_slist_append failed");
    }
    has_content_type = has_content_type || EqualsIgnoreCase(name, "Content-Type");
    has_expect = has_expect || EqualsIgnoreCase(name, "Expect");
  }
  if (request.idempotency_key) {
    key_ = *request.idempotency_key;
    if (!FindHeader(request.headers, "Idempotency-Key") &&
        !SlistAppend(headers_, "Idempotency-Key: " + key_)) {
      return Status(StatusCode::kNoMemory, "curl_slist_append failed");
    }
  } else if (std::optional<std::string> in_headers =
                 FindHeader(request.headers, "Idempotency-Key")) {
    key_ = *in_headers;
  }
  const bool sends_body = request.method != "HEAD" &&
                          (request.method == "POST" || !request.body.empty());
  // libcurl labels POSTFIELDS as a form (application/x-www-form-urlencoded);
  // the body is the caller's bytes, so no type is invented for it.
  if (sends_body && !has_content_type && !SlistAppend(headers_, "Content-Type:")) {
    return Status(StatusCode::kNoMemory, "curl_slist_append failed");
  }
  // No "Expect: 100-continue" round trip for large bodies.
  if (sends_body && !has_expect && !SlistAppend(headers_, "Expect:")) {
    return Status(StatusCode::kNoMemory, "curl_slist_append failed");
  }

  // The client's rule; strict_methods (the client's, or the request's
  // override) means kStrict, and a request's strict = false undoes it.
  HttpMethodRule rule = settings.options.strict_methods ? HttpMethodRule::kStrict
                                                        : settings.options.method_rule;
  if (request.strict_methods) {
    if (*request.strict_methods) {
      rule = HttpMethodRule::kStrict;
    } else if (rule == HttpMethodRule::kStrict) {
      rule = HttpMethodRule::kIdempotent;
    }
  }
  replay_safe_ = HttpMethodReplaySafe(rule, settings.options.allowed_methods, request.method,
                                      !key_.empty());

  return OkStatus();
}

Status Exchange::SetHeader(const std::string& name, const std::string& value) {
  Status field = CheckHeaderField(name, value);
  if (!field.ok()) return field;
  if (EqualsIgnoreCase(name, "Idempotency-Key")) {
    return InvalidArgumentError(
        "the Idempotency-Key header cannot be replaced: every attempt of a call sends one key");
  }
  // The list is rebuilt without the field's lines ("Name: v", or libcurl's
  // "Name;" for an empty value), then the new line goes last.
  const auto named = [&name](std::string_view line) {
    return line.size() > name.size() && StartsWithIgnoreCase(line, name) &&
           (line[name.size()] == ':' || line[name.size()] == ';');
  };
  Slist rebuilt;
  size_t head = request_->url.size() + settings_->options.user_agent.size() + 16;
  for (const curl_slist* item = headers_.get(); item != nullptr; item = item->next) {
    const std::string_view line(item->data);
    if (named(line)) continue;
    head += line.size() + 2;
    if (!SlistAppend(rebuilt, std::string(line))) {
      return Status(StatusCode::kNoMemory, "curl_slist_append failed");
    }
  }
  const std::string line = value.empty() ? name + ";" : name + ": " + value;
  head += line.size() + 2;
  if (head > kMaxRequestHeadBytes) {
    return InvalidArgumentError("request head too large with header \"" + name + "\": " +
                                std::to_string(head) + " bytes, more than the limit of " +
                                std::to_string(kMaxRequestHeadBytes));
  }
  if (!SlistAppend(rebuilt, line)) return Status(StatusCode::kNoMemory, "curl_slist_append failed");
  headers_ = std::move(rebuilt);
  return OkStatus();
}


void Exchange::Begin(TimePoint now) {
  const HttpRequest& request = *request_;
  CallOptions options;
  options.policy = request.policy;
  options.replay_safe = replay_safe_;
  options.attempt_timeout = settings_->options.attempt_timeout;
  options.fallback = request.fallback;
  options.max_attempts = request.max_attempts;
  options.no_wait = request.no_wait;
  // The breakers and the metrics are by origin: the key is worked out only
  // when one of them needs it (a thread's last URL and origin are kept).
  if (settings_->options.breakers || settings_->metrics_by_origin ||
      settings_->per_origin_budget || settings_->options.rate_limiter) {
    if (const std::string* origin = CachedOrigin(request.url)) options.key = *origin;
  }
  // Another breaker key than the origin: the request's own, or the client's
  // choice (breaker_key.h). Lives until Begin returns, as options.key needs.
  std::optional<std::string> breaker_key;
  if (settings_->options.breakers) {
    if (!request.breaker_key.empty()) {
      options.breaker_key = request.breaker_key;
    } else if (settings_->options.breaker_key.kind != BreakerKeyKind::kOrigin) {
      breaker_key = HttpBreakerKey(settings_->options.breaker_key, request.method, request.url);
      if (breaker_key) options.breaker_key = *breaker_key;
    }
  }
  // The origin's pipeline (its own budget): looked up before `options.key`
  // is reused, since CachedOrigin's string changes with the next URL.
  pipeline_ = &settings_->PipelineFor(options.key);
  call_.emplace(pipeline_->Begin(now, options));
}

bool Exchange::Admit(TimePoint now) {
  admission_ = call_->Admit(now);
  return admission_.go();
}

bool Exchange::AdmitBlocking() {
  Clock& clock = *clock_;
  for (;;) {
    if (Admit(clock.Now())) return true;
    if (!admission_.wait()) return false;
    if (abort_ == nullptr) {
      WaitForAdmission(admission_, clock);
      continue;
    }
    // In slices, so that the abort hook (Ctrl-C) is heard while queued; an
    // aborted call is abandoned by Finish, which frees its queue place.
    Duration left = admission_.delay;
    while (left > Duration::zero()) {
      if (PollAbort()) return false;
      AttemptAdmission slice = admission_;
      slice.delay = std::min(left, kAbortPollInterval);
      const TimePoint before = clock.Now();
      WaitForAdmission(slice, clock);
      if (slice.ticket && slice.ticket->granted()) break;
      left -= std::max(clock.Now() - before, slice.delay);
    }
    if (PollAbort()) return false;
  }
}

bool Exchange::AcquireConnection() {
  Bulkhead* cap = settings_->connections.get();
  if (cap == nullptr) return true;
  if (cap->TryAcquire()) {
    connection_held_ = true;
    return true;
  }
  std::shared_ptr<BulkheadTicket> ticket = cap->Enqueue();  // the queue never refuses
  for (;;) {
    if (ticket == nullptr || ticket->granted()) break;
    if (PollAbort()) {
      ticket->Cancel();  // a slot granted meanwhile goes on to the next waiter
      return false;
    }
    const std::optional<Duration> left = call_->TimeLeft(clock_->Now());
    if (left && *left <= Duration::zero()) {
      ticket->Cancel();  // likewise: a slot granted at this moment is passed on
      connection_timed_out_ = true;
      return false;
    }
    ticket->WaitFor(left ? std::min(*left, kAbortPollInterval) : kAbortPollInterval);
  }
  // A null ticket (unreachable: the queue is unbounded) holds no slot.
  connection_held_ = ticket != nullptr;
  return true;
}

void Exchange::ReleaseConnection() {
  if (!connection_held_) return;
  connection_held_ = false;
  settings_->connections->Release();
}

Duration Exchange::AttemptTimeout(TimePoint now) const {
  // CallOptions::attempt_timeout is always set, so the pipeline always gives
  // a bound; the fallback is defensive.
  Duration timeout = admission_.timeout.value_or(settings_->options.attempt_timeout);
  if (std::optional<Duration> left = call_->TimeLeft(now)) timeout = std::min(timeout, *left);
  return timeout;
}

void Exchange::Setup(CURL* easy, Duration timeout) {
  last_ = AttemptResult{};
  errbuf_[0] = '\0';
  const HttpClientOptions& options = settings_->options;
  const HttpRequest& request = *request_;
  curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, errbuf_);
  // CURLOPT_URL cleared first: libcurl (7.88) otherwise keeps using the
  // URL string of the handle's previous transfer over a new CURLU.
  curl_easy_setopt(easy, CURLOPT_URL, static_cast<char*>(nullptr));
  curl_easy_setopt(easy, CURLOPT_CURLU, url_.get());
  curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, follow_redirects_ ? 1L : 0L);
  curl_easy_setopt(easy, CURLOPT_MAXREDIRS, static_cast<long>(max_redirects_));
  curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, ToCurlMillis(timeout));
  curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS,
                   ToCurlMillis(std::min(timeout, options.connect_timeout)));
  // libcurl silently sends a request again on a new connection when a
  // kept-alive one turns out dead before any response byte arrived (it
  // cannot tell "closed while idle" from "closed after reading the
  // request"). For a request that must not be replayed (a POST or PATCH
  // without an idempotency key, or anything but GET/HEAD/OPTIONS in strict
  // mode) that could apply it twice, so such requests never reuse a
  // connection: one extra connection buys the at-most-once promise.
  curl_easy_setopt(easy, CURLOPT_FRESH_CONNECT, replay_safe_ ? 0L : 1L);
  curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers_.get());
  curl_easy_setopt(easy, CURLOPT_WRITEDATA, &last_.transfer);
  curl_easy_setopt(easy, CURLOPT_HEADERDATA, &last_.transfer);
  if (abort_ != nullptr) {
    curl_easy_setopt(easy, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(easy, CURLOPT_XFERINFOFUNCTION, &Exchange::OnProgress);
    curl_easy_setopt(easy, CURLOPT_XFERINFODATA, this);
  } else {
    curl_easy_setopt(easy, CURLOPT_NOPROGRESS, 1L);
  }

  // The method, from a clean state: HTTPGET sets GET and clears NOBODY
  // and upload; no custom verb; then what this method needs.
  const std::string& method = request.method;
  curl_easy_setopt(easy, CURLOPT_HTTPGET, 1L);
  curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, static_cast<char*>(nullptr));
  if (method == "HEAD") {
    curl_easy_setopt(easy, CURLOPT_NOBODY, 1L);
  } else if (method == "POST" || !request.body.empty()) {
    curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(request.body.size()));
    curl_easy_setopt(easy, CURLOPT_POSTFIELDS, request.body.data());
    if (method != "POST") curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, method.c_str());
  } else if (method != "GET") {
    curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, method.c_str());
  }
}

void Exchange::Collect(CURL* easy, CURLcode code) {
  AttemptResult& r = last_;
  r.code = code;
  long status = 0;
  curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
  r.status = static_cast<int>(status);
  char* effective = nullptr;
  if (curl_easy_getinfo(easy, CURLINFO_EFFECTIVE_URL, &effective) == CURLE_OK &&
      effective != nullptr) {
    r.effective_url = effective;
  } else {
    r.effective_url = request_->url;
  }
  curl_off_t connect_us = 0;
  curl_easy_getinfo(easy, CURLINFO_CONNECT_TIME_T, &connect_us);
  long request_size = 0;
  curl_easy_getinfo(easy, CURLINFO_REQUEST_SIZE, &request_size);
  r.connected = connect_us > 0;
  r.request_sent = request_size > 0;
  if (r.code != CURLE_OK) {
    r.error = errbuf_[0] != '\0' ? std::string(errbuf_) : std::string(curl_easy_strerror(r.code));
    while (!r.error.empty() && (r.error.back() == '\n' || r.error.back() == '\r')) {
      r.error.pop_back();
    }
  }
  if (r.code == CURLE_ABORTED_BY_CALLBACK && aborted_) aborted_in_transfer_ = true;
}

bool Exchange::PollAbort() {
  if (aborted_) return true;
  if (abort_ == nullptr) return false;
  bool abort = false;
  try {
    abort = (*abort_)();
  } catch (...) {
    // A hook must not throw (http/client.h): counts as "go on".
  }
  aborted_ = abort;
  return aborted_;
}

bool Exchange::Wait(Duration delay) {
  Clock& clock = *clock_;
  if (abort_ == nullptr) {
    clock.SleepFor(delay);
    return true;
  }
  Duration left = delay;
  while (left > Duration::zero()) {
    if (PollAbort()) return false;
    const Duration slice = std::min(left, kAbortPollInterval);
    const TimePoint before = clock.Now();
    clock.SleepFor(slice);
    // An overslept slice counts in full; every slice counts at least its
    // length, so the loop ends whatever the clock does.
    left -= std::max(clock.Now() - before, slice);
  }
  return !PollAbort();
}

Outcome Exchange::MakeOutcome() {
  const bool interim_only = last_.status >= 100 && last_.status < 200;
  if ((last_.code == CURLE_OK && last_.status > 0 &&
       (!last_.transfer.head_complete || interim_only)) ||
      (last_.code == CURLE_GOT_NOTHING && interim_only)) {
    // libcurl calls a transfer done when the connection closes inside the
    // header block (curl 7.88 exits 0 on such bytes): the fields before the
    // cut came, the empty line that ends the head did not, so neither did
    // a response. A transfer that ends after an interim 1xx response (which
    // libcurl reports as "empty reply") got no response either (RFC 9110
    // section 15.2: an interim response precedes the final one). The request
    // was sent, so only a replay-safe request is retried; CURLE_PARTIAL_FILE
    // reports it as a truncation, as it does a body cut short.
    last_.code = CURLE_PARTIAL_FILE;
    last_.error = last_.transfer.head_complete
                      ? "only an interim " + std::to_string(last_.status) +
                            " response was received"
                      : "the connection closed inside the response's header block";
  }
  if (last_.code == CURLE_OK && last_.status > 0) {
    const std::optional<std::string> value = FindHeader(last_.transfer.headers, "Retry-After");
    return HttpResponseOutcome(
        last_.status, value ? std::optional<std::string_view>(*value) : std::nullopt,
        !key_.empty(), clock_->WallNow());
  }
  if (last_.code == CURLE_OK) {
    last_.code = CURLE_GOT_NOTHING;  // no status line: treat as an empty reply
    last_.error = "no HTTP status received";
  }
  return TransportOutcome(last_.code, last_.connected, last_.request_sent);
}

Decision Exchange::OnAttemptDone(TimePoint now) {
  if (last_.transfer.failed_alloc) {
    // Out of memory in a callback: the call ends (Finish abandons it).
    no_memory_ = true;
    aborted_in_transfer_ = true;
    decision_ = Decision{};
    decision_.attempt = call_->attempts() + 1;
    return decision_;
  }
  last_outcome_ = MakeOutcome();
  decision_ = call_->Record(last_outcome_, now);
  return decision_;
}

HttpRetryEvent Exchange::RetryEvent() const {
  HttpRetryEvent e;
  e.attempt = decision_.attempt;
  e.delay = decision_.delay;
  e.error = last_outcome_.error;
  e.http_status = last_outcome_.http_status;
  e.from_retry_after = decision_.from_retry_after;
  return e;
}

bool Exchange::NotifyRetry() {
  const HttpRetryHook& hook =
      request_->on_retry ? request_->on_retry : settings_->options.on_retry;
  if (!hook) return true;
  HttpRetryEvent event = RetryEvent();
  try {
    hook(event);
  } catch (...) {
    // A hook must not throw (http/client.h); the retries go on.
    return true;
  }
  if (event.cancel) CancelRetry(clock_->Now());
  return !cancelled_;
}

void Exchange::CancelRetry(TimePoint now) {
  cancelled_ = true;
  call_->Abandon(now);
}

int Exchange::OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<Exchange*>(user)->PollAbort() ? 1 : 0;
}

void Exchange::FailToStart(TimePoint now) {
  no_memory_ = true;
  call_->Abandon(now);
}

void Exchange::Abandon(TimePoint now, bool in_transfer, bool cancelled) {
  aborted_ = true;
  aborted_in_transfer_ = in_transfer;
  if (cancelled && call_ && !call_->finished()) call_->Cancel(now, in_transfer ? 1 : 0);
  (void)Finish(now, nullptr);
}

Status Exchange::FinalError(const std::string& what, int attempts) const {
  const ErrorKind last_error = TransportOutcome(last_.code, last_.connected, last_.request_sent).error;
  // libcurl's detail may quote a URL of its own (a proxy's, from the
  // environment, credentials included).
  std::string tail = " after " + std::to_string(attempts) +
                     (attempts == 1 ? " attempt" : " attempts") + " (" +
                     RedactUrlsInText(last_.error) + ")";
  if (decision_.reason == StopReason::kBudget) {
    tail += "; the retry budget refused a retry";
  }
  if (decision_.reason == StopReason::kDeadline) {
    return DeadlineExceededError(what + "deadline exceeded; last error " +
                                 ErrorPhrase(last_error) + tail);
  }
  if (last_error == ErrorKind::kInvalidUrl) {
    return InvalidArgumentError(what + ErrorPhrase(last_error) + tail);
  }
  if (last_error == ErrorKind::kTimeout || last_error == ErrorKind::kConnectTimeout) {
    return TimeoutError(what + ErrorPhrase(last_error) + tail);
  }
  return TransportError(what + ErrorPhrase(last_error) + tail);
}

Status Exchange::LimitError(const std::string& what, int attempts) const {
  const std::string tail =
      attempts > 0 ? " after " + std::to_string(attempts) + (attempts == 1 ? " attempt" : " attempts")
                   : std::string();
  if (connection_timed_out_) {
    return DeadlineExceededError(what + "deadline exceeded waiting for a connection (max_connections " +
                                 std::to_string(settings_->options.max_connections) + ")" + tail);
  }
  // A bulkhead, a rate limiter or the throttle refused: its own code
  // (kBulkheadFull, kRateLimited, kThrottled), never retried.
  const Status refusal = call_->RefusalStatus();
  return Status(refusal.code(), what + refusal.message() + tail);
}

Result<HttpResponse> Exchange::Finish(TimePoint now, HttpCallInfo* info) {
  if (!call_) return InternalError("HTTP call finished before it began");
  // A call its caller stopped (aborted, cancelled, out of memory) is
  // abandoned: a half-open probe permit is freed without judging the
  // origin, and the metrics count it failed, so that the in-flight gauges
  // come back down.
  if (!call_->finished()) call_->Abandon(now, aborted_in_transfer_ ? 1 : 0);
  // An attempt aborted mid-transfer never reached the pipeline.
  const int attempts = call_->attempts() + (aborted_in_transfer_ ? 1 : 0);
  const Duration elapsed = now - call_->start();
  const bool circuit_open = admission_.refused();
  const bool got_response =
      attempts > 0 && last_.code == CURLE_OK && !no_memory_ && !aborted_;
  const ErrorKind last_error =
      attempts == 0 || got_response
          ? ErrorKind::kNone
          : TransportOutcome(last_.code, last_.connected, last_.request_sent).error;
  const bool stopped = !circuit_open && !cancelled_ && !aborted_ && !no_memory_;
  const bool use_fallback =
      circuit_open ? admission_.use_fallback : stopped && decision_.use_fallback;
  if (info != nullptr) {
    *info = HttpCallInfo{};
    info->attempts = attempts;
    info->elapsed = elapsed;
    info->last_error = no_memory_ ? ErrorKind::kTransport : last_error;
    info->stop_reason = circuit_open && admission_.reason != StopReason::kCircuitOpen
                            ? admission_.reason
                        : circuit_open || aborted_ || connection_timed_out_
                            ? StopReason::kNone
                            : decision_.reason;
    info->idempotency_key = key_;
    info->last_status = got_response ? last_.status : 0;
    info->use_fallback = use_fallback;
    if (circuit_open) {
      CircuitBreaker* breaker = call_->breaker();
      if (admission_.reason == StopReason::kCircuitOpen) {
        info->breaker_key = breaker != nullptr ? breaker->name() : std::string();
      }
      info->retry_in = admission_.retry_in;
    }
  }
  const HttpRequest& request = *request_;
  // Every message names the URL as rendered (http/redact.h): these reach
  // mulligan_last_error, the Python exceptions and whatever logs them.
  const std::string what = request.method + " " + RedactUrl(request.url) + ": ";
  if (no_memory_) {
    return Status(StatusCode::kNoMemory, "out of memory while receiving the response");
  }
  if (aborted_) {
    return Status(StatusCode::kCallback,
                  what + "aborted by the should_abort hook " +
                      (aborted_in_transfer_ ? "during attempt " + std::to_string(attempts)
                                            : "after " + std::to_string(attempts) +
                                                  (attempts == 1 ? " attempt" : " attempts")));
  }
  if (cancelled_) {
    return Status(StatusCode::kCallback,
                  what + "the on_retry hook stopped the retries after " +
                      std::to_string(attempts) + (attempts == 1 ? " attempt" : " attempts"));
  }
  // Adaptive throttling that rejected a retry (not the first attempt)
  // keeps the last answer as the call's result, as a refused retry budget
  // does: the caller sees the 503 that was to be retried, with stop reason
  // kThrottled (Added in 0.5.). A rejected first attempt is kThrottled; a
  // bulkhead or rate limiter refusal stays its own error, which carries
  // how long to wait (HttpCallInfo::retry_in).
  const bool throttled_retry =
      circuit_open && admission_.reason == StopReason::kThrottled && got_response;
  const bool limit_refused = circuit_open && admission_.reason != StopReason::kCircuitOpen;
  if (connection_timed_out_ || (limit_refused && !throttled_retry)) {
    return LimitError(what, attempts);
  }
  if (circuit_open && !throttled_retry) {
    std::string message = what + "circuit open: " + call_->RefusalStatus().message();
    if (attempts > 0) {
      message += " after " + std::to_string(attempts) + (attempts == 1 ? " attempt" : " attempts");
    }
    return Status(StatusCode::kCircuitOpen, message);
  }
  if (got_response) {
    HttpResponse response;
    response.status = last_.status;
    response.headers = std::move(last_.transfer.headers);
    response.body = std::move(last_.transfer.body);
    response.attempts = attempts;
    response.elapsed = elapsed;
    response.stop_reason = throttled_retry ? StopReason::kThrottled : decision_.reason;
    response.idempotency_key = key_;
    response.url = std::move(last_.effective_url);
    response.use_fallback = use_fallback;
    return response;
  }
  return FinalError(what, attempts);
}

}  // namespace internal
}  // namespace v0
}  // namespace mulligan
