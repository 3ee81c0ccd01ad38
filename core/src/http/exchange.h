// core/src/http/exchange.h — one logical HTTP call: the transport side of
// the pipeline (private).
//
// An Exchange turns a request into libcurl transfers and each transfer's end
// into an Outcome; every decision about it -- admit or refuse, retry or
// stop, what the breaker records, what the metrics count, whether a fallback
// answers -- is its pipeline Call's (pipeline/call.h). HttpClient::Send
// (blocking), HttpClientCall (stepped) and HttpAsyncEngine (libcurl multi,
// driven by an event loop) are three loops over the same Exchange.

#ifndef MULLIGAN_HTTP_EXCHANGE_H_
#define MULLIGAN_HTTP_EXCHANGE_H_

#include <curl/curl.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "mulligan/hedging/hedging.h"
#include "mulligan/http/client.h"
#include "mulligan/pipeline/pipeline.h"
#include "request.h"
#include "transfer.h"

namespace mulligan {
inline namespace v0 {
namespace internal {

// One origin's retry budget and the pipeline over it (the client's parts,
// with this budget). Not copyable or movable: the pipeline is borrowed by
// calls.
struct OriginPipeline {
  OriginPipeline(const Pipeline::Parts& parts, std::shared_ptr<RetryBudget> b);
  std::shared_ptr<RetryBudget> budget;
  Pipeline pipeline;
};

// What every call of a client shares: the validated options, the default
// policy and the pipeline over them (one per origin with per-origin
// budgets), and the connection cap.
// Not copyable or movable: the pipeline points at the policy.
// Thread-safety: PipelineFor may be called from any thread.
struct Settings {
  Settings(const HttpClientOptions& opts, RetryPolicy pol);
  Settings(const Settings&) = delete;
  Settings& operator=(const Settings&) = delete;

  // The pipeline of a call to `origin` (HttpOrigin's form): the client's
  // only one without per-origin budgets, else `origin`'s (made on first
  // use; past kMaxBudgetOrigins origins, the overflow one). Never fails.
  const Pipeline& PipelineFor(std::string_view origin) const;
  // The per-origin budget of `origin` (made on first use), or null without
  // per-origin budgets (tests and the C ABI read its tokens).
  std::shared_ptr<RetryBudget> BudgetFor(std::string_view origin) const;

  HttpClientOptions options;
  RetryPolicy policy;
  Clock* clock;
  bool proxy_from_env;  // read once, when the client is made
  // Calls report metrics by origin (no metrics_name): their key is needed.
  bool metrics_by_origin;
  // Budgets per origin (retry_budget set, no shared_budget).
  bool per_origin_budget;
  Pipeline pipeline;
  // HttpClient's cap on transfers in flight (max_connections > 0), FIFO.
  std::shared_ptr<Bulkhead> connections;
  // The hedging policy of HttpClientOptions::hedging (its latency window
  // shared by every hedged Send of the client), or null.
  std::shared_ptr<HedgingPolicy> hedging;

 private:
  const OriginPipeline& OriginFor(std::string_view origin) const;
  mutable std::mutex origins_mu_;
  mutable std::unordered_map<std::string, std::unique_ptr<OriginPipeline>> origins_;
  mutable std::unique_ptr<OriginPipeline> overflow_;
};

// Validates `options` (and the retry options in them) and builds the
// settings. kInvalidArgument names the bad field; kInternal when libcurl
// cannot be initialised.
Result<std::unique_ptr<Settings>> MakeSettings(const HttpClientOptions& options);

// The result of one libcurl transfer.
struct AttemptResult {
  CURLcode code = CURLE_OK;
  std::string error;  // libcurl's detail text when code != CURLE_OK
  int status = 0;
  std::string effective_url;
  bool connected = false;
  bool request_sent = false;
  Transfer transfer;
};

// One logical call. Not copyable or movable: libcurl holds pointers into it
// (error buffer, transfer, progress callback) while an attempt runs.
// Thread-safety: not thread-safe; one call belongs to one caller.
class Exchange {
 public:
  Exchange() = default;
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  // Validates `request` and prepares what every attempt sends. With
  // `abortable` false the should_abort hooks are not polled (the async
  // engine's caller cancels calls itself).
  // REQUIRES: `request`, its policy and `settings` outlive the call.
  Status Init(const Settings& settings, const HttpRequest& request, bool abortable = true);

  // Begins the pipeline call at `now` (the first attempt's start).
  void Begin(TimePoint now);

  // Replaces every header field named `name` (any case) in what the next
  // attempts send by `name: value`, or adds it: a field that differs per
  // attempt, such as the W3C traceparent of each attempt's span. Errors:
  // kInvalidArgument (CheckHeaderField; the Idempotency-Key, which is the
  // call's for every attempt; a head past kMaxRequestHeadBytes), kNoMemory.
  // The fields are unchanged on error. REQUIRES: no attempt in transfer.
  Status SetHeader(const std::string& name, const std::string& value);

  // The clock of this call: the request's (a test's fake), else the client's.
  Clock& clock() const { return *clock_; }

  // Asks the pipeline whether the next attempt may run at `now`. False: the
  // call is over (refused: circuit open, bulkhead full, rate limited,
  // throttled), or must wait (admission_wait(): a bulkhead's queue or a rate
  // limiter's slot; the event loop waits admission_delay() and asks again).
  bool Admit(TimePoint now);
  // HttpClient's Admit: waits out kWait admissions on the calling thread
  // (WaitForAdmission, in slices polling the abort hook when one is set),
  // bounded by the pipeline (max_wait, deadline). False: refused or aborted.
  bool AdmitBlocking();
  bool admission_wait() const { return admission_.wait(); }
  Duration admission_delay() const { return admission_.delay; }
  // The wait is a place in a bulkhead's queue (granted early by a release).
  bool admission_queued() const { return admission_.ticket != nullptr; }
  // HttpClient's connection cap (Settings::connections): takes a transfer
  // slot, waiting FIFO on the calling thread, bounded by the deadline and
  // the abort hook. False: the call is over (deadline: Finish reports
  // kDeadlineExceeded; or aborted). ReleaseConnection gives it back (no-op
  // without a slot).
  bool AcquireConnection();
  void ReleaseConnection();
  // The admitted attempt's timeout for a transfer starting at `now`: the
  // admission's bound (never unset: an HTTP attempt is always bounded, by the
  // policy's, the client's, or the deadline's), trimmed again to the time
  // left at `now` (an attempt queued for a connection slot starts late).
  Duration AttemptTimeout(TimePoint now) const;

  // Sets up `easy` for the admitted attempt: every option that belongs to
  // the call, each time, over whatever an earlier call left.
  // REQUIRES: `easy` was configured by ConfigureHandle for these settings.
  void Setup(CURL* easy, Duration timeout);
  // Reads what the finished transfer on `easy` produced.
  void Collect(CURL* easy, CURLcode code);

  // Polls the should_abort hook (if any); true once it asked to abort.
  bool PollAbort();
  bool aborted() const { return aborted_; }
  // Sleeps `delay` through the call's clock, in slices of at most
  // kAbortPollInterval when a should_abort hook is set; false when the hook
  // aborted the call.
  bool Wait(Duration delay);

  // Lets the pipeline judge the attempt that just finished at `now`.
  Decision OnAttemptDone(TimePoint now);
  // What an on_retry hook is told about the retry just decided.
  HttpRetryEvent RetryEvent() const;
  // Calls the request's (or else the client's) on_retry hook; returns false
  // when the hook cancelled the call (which is then over).
  bool NotifyRetry();
  // Ends a call whose retry the caller will not make (a cancelling hook):
  // Finish reports kCallback.
  void CancelRetry(TimePoint now);

  ErrorKind last_error() const { return last_outcome_.error; }
  int last_status() const { return last_outcome_.http_status; }

  // Marks the next attempt as unable to start (libcurl could not make or add
  // a handle: memory); Finish then reports kNoMemory.
  void FailToStart(TimePoint now);
  // Ends a call its caller gave up (HttpAsyncEngine::Cancel, or the engine
  // destroyed with calls pending), as an aborted call ends. `in_transfer`:
  // an attempt was running (it counts as made). `cancelled`: the caller no
  // longer wants the answer (a hedged request's losing copy,
  // HttpAsyncEngine::CancelCopy): the call is ended with Call::Cancel, so
  // the metrics count it cancelled, not failed. (cancelled: added in 0.6.)
  void Abandon(TimePoint now, bool in_transfer, bool cancelled = false);

  // The call's result once it stopped. `info`, when non-null, is filled in
  // either way.
  Result<HttpResponse> Finish(TimePoint now, HttpCallInfo* info);

 private:
  static int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t);
  Outcome MakeOutcome();
  Status FinalError(const std::string& what, int attempts) const;
  // The error of a call a limit ended: the connection cap's deadline, or a
  // bulkhead's, rate limiter's or throttle's refusal.
  Status LimitError(const std::string& what, int attempts) const;

  const Settings* settings_ = nullptr;
  const HttpRequest* request_ = nullptr;
  Clock* clock_ = nullptr;
  Slist headers_;
  std::string key_;
  bool replay_safe_ = true;
  bool follow_redirects_ = false;
  int max_redirects_ = 10;
  ParsedUrl url_;  // the request's URL, parsed (CURLOPT_CURLU points at it)
  std::optional<Call> call_;
  AttemptAdmission admission_;
  bool no_memory_ = false;
  const Pipeline* pipeline_ = nullptr;
  bool connection_held_ = false;
  bool connection_timed_out_ = false;
  bool cancelled_ = false;
  const HttpAbortHook* abort_ = nullptr;  // null: never aborted
  bool aborted_ = false;
  bool aborted_in_transfer_ = false;
  AttemptResult last_;
  Outcome last_outcome_;
  Decision decision_;
  char errbuf_[CURL_ERROR_SIZE] = {};
};

}  // namespace internal
}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_HTTP_EXCHANGE_H_
