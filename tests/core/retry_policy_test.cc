// RetryPolicy validation and classification; RetrySession decisions with a fake clock.
#include "mulligan/retry/policy.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

namespace mulligan {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

RetryPolicy Make(const RetryOptions& options) {
  Result<RetryPolicy> policy = RetryPolicy::Create(options);
  EXPECT_TRUE(policy.ok()) << policy.status().ToString();
  return std::move(policy).value();
}

RetryOptions NoJitter() {
  RetryOptions options;
  options.backoff.jitter = JitterKind::kNone;
  return options;
}

TEST(RetryPolicyTest, DefaultsAreDesignSectionFour) {
  RetryPolicy policy = RetryPolicy::Default();
  const RetryOptions& o = policy.options();
  EXPECT_EQ(o.max_attempts, 3);
  EXPECT_EQ(o.backoff.kind, BackoffKind::kExponential);
  EXPECT_EQ(o.backoff.base, milliseconds(200));
  EXPECT_EQ(o.backoff.multiplier, 2.0);
  EXPECT_EQ(o.backoff.jitter, JitterKind::kFull);
  EXPECT_EQ(o.backoff.max_delay, seconds(10));
  EXPECT_FALSE(o.deadline.has_value());
  EXPECT_EQ(o.retry_after_max, seconds(60));
}

TEST(RetryPolicyTest, DefaultClassification) {
  RetryPolicy policy = RetryPolicy::Default();
  for (int status : {408, 429, 500, 502, 503, 504}) {
    EXPECT_EQ(policy.Classify(Outcome::Http(status)), Classification::kRetryable) << status;
  }
  for (int status : {400, 401, 403, 404, 405, 409, 422, 501, 505, 599, 600, 999}) {
    EXPECT_EQ(policy.Classify(Outcome::Http(status)), Classification::kTerminal) << status;
  }
  for (int status : {0, 100, 200, 204, 301, 304, 399}) {
    EXPECT_EQ(policy.Classify(Outcome::Http(status)), Classification::kSuccess) << status;
  }
  for (ErrorKind kind : {ErrorKind::kConnectionRefused, ErrorKind::kConnectionReset,
                         ErrorKind::kDnsFailure, ErrorKind::kConnectTimeout, ErrorKind::kTimeout,
                         ErrorKind::kTransport, ErrorKind::kTruncated, ErrorKind::kRetryable}) {
    EXPECT_EQ(policy.Classify(Outcome::Transport(kind)), Classification::kRetryable)
        << ErrorKindName(kind);
  }
  for (ErrorKind kind : {ErrorKind::kTlsError, ErrorKind::kInvalidUrl, ErrorKind::kTerminal}) {
    EXPECT_EQ(policy.Classify(Outcome::Transport(kind)), Classification::kTerminal)
        << ErrorKindName(kind);
  }
  EXPECT_EQ(policy.Classify(Outcome::Success()), Classification::kSuccess);
}

TEST(RetryPolicyTest, CustomClassification) {
  RetryOptions options;
  options.retryable_statuses = {409};
  options.retryable_errors = {ErrorKind::kTlsError};
  RetryPolicy policy = Make(options);
  EXPECT_EQ(policy.Classify(Outcome::Http(409)), Classification::kRetryable);
  EXPECT_EQ(policy.Classify(Outcome::Http(503)), Classification::kTerminal);
  EXPECT_EQ(policy.Classify(Outcome::Transport(ErrorKind::kTlsError)), Classification::kRetryable);
  EXPECT_EQ(policy.Classify(Outcome::Transport(ErrorKind::kConnectionReset)),
            Classification::kTerminal);
  EXPECT_EQ(policy.Classify(Outcome::Failure(true)), Classification::kRetryable);
}

TEST(RetryPolicyTest, InvalidOptionsFailAtConstruction) {
  struct Case {
    const char* needle;
    RetryOptions options;
  };
  std::vector<Case> cases;
  RetryOptions o;
  o.max_attempts = 0;
  cases.push_back({"max_attempts must be >= 1, got 0", o});
  o = {};
  o.max_attempts = -3;
  cases.push_back({"max_attempts", o});
  o = {};
  o.deadline = Duration::zero();
  cases.push_back({"deadline", o});
  o = {};
  o.attempt_timeout = milliseconds(-1);
  cases.push_back({"attempt_timeout", o});
  o = {};
  o.retry_after_max = seconds(-1);
  cases.push_back({"retry_after_max", o});
  o = {};
  o.retryable_statuses = {503, 99};
  cases.push_back({"retryable_statuses", o});
  o = {};
  o.retryable_errors = {static_cast<ErrorKind>(42)};
  cases.push_back({"retryable_errors", o});
  o = {};
  o.backoff.base = milliseconds(-200);
  cases.push_back({"base_delay", o});
  o = {};
  o.backoff.multiplier = std::numeric_limits<double>::infinity();
  cases.push_back({"multiplier", o});
  for (const Case& c : cases) {
    Result<RetryPolicy> policy = RetryPolicy::Create(c.options);
    ASSERT_FALSE(policy.ok()) << c.needle;
    EXPECT_EQ(policy.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(policy.status().message().find(c.needle), std::string::npos)
        << policy.status().message();
  }
}

// Runs a chain of always-failing attempts through a FakeClock the way the
// convenience loops do, and returns the start time of each attempt (seconds
// after the first) plus the final decision.
struct Chain {
  std::vector<double> starts;
  Decision last;
};

Chain RunAlwaysFailing(const RetryPolicy& policy, FakeClock& clock, Duration attempt_cost) {
  Chain chain;
  const TimePoint origin = clock.Now();
  RetrySession session = policy.Begin(clock.Now());
  for (;;) {
    chain.starts.push_back(std::chrono::duration<double>(clock.Now() - origin).count());
    clock.Advance(attempt_cost);
    Decision decision = session.OnOutcome(Outcome::Failure(true), clock.Now());
    if (!decision.retry()) {
      chain.last = decision;
      return chain;
    }
    clock.SleepFor(decision.delay);
  }
}

TEST(RetrySessionTest, DeadlineFiveSecondsWithWaitsOneTwoFour) {
  RetryOptions options = NoJitter();
  options.max_attempts = 10;
  options.backoff.base = seconds(1);
  options.deadline = seconds(5);
  RetryPolicy policy = Make(options);
  FakeClock clock;
  // The policy is built long before the call: the budget starts at the first attempt.
  clock.Advance(seconds(100));
  Chain chain = RunAlwaysFailing(policy, clock, Duration::zero());
  EXPECT_EQ(chain.starts, (std::vector<double>{0.0, 1.0, 3.0}));  // the 4th would start at 7 s
  EXPECT_EQ(chain.last.reason, StopReason::kDeadline);
  EXPECT_EQ(chain.last.attempt, 3);
  for (double start : chain.starts) EXPECT_LT(start, 5.0);
}

TEST(RetrySessionTest, NoAttemptStartsAtOrAfterTheDeadlineWhateverTheAttemptCost) {
  RetryOptions options = NoJitter();
  options.max_attempts = 100;
  options.backoff.base = milliseconds(300);
  options.backoff.multiplier = 1.5;
  options.deadline = seconds(5);
  RetryPolicy policy = Make(options);
  for (int cost_ms : {0, 1, 250, 999, 4999, 5000, 7000}) {
    FakeClock clock;
    Chain chain = RunAlwaysFailing(policy, clock, milliseconds(cost_ms));
    for (double start : chain.starts) ASSERT_LT(start, 5.0) << cost_ms;
    EXPECT_EQ(chain.last.reason, StopReason::kDeadline) << cost_ms;
  }
}

TEST(RetrySessionTest, AttemptsExhaustedWithExactDelays) {
  RetryPolicy policy = Make(NoJitter());
  FakeClock clock;
  Chain chain = RunAlwaysFailing(policy, clock, Duration::zero());
  EXPECT_EQ(chain.starts, (std::vector<double>{0.0, 0.2, 0.6}));
  EXPECT_EQ(chain.last.reason, StopReason::kAttemptsExhausted);
  EXPECT_EQ(chain.last.attempt, 3);
  EXPECT_EQ(clock.TotalSlept(), milliseconds(600));
}

TEST(RetrySessionTest, AttemptTimeoutIsTrimmedToTheTimeLeft) {
  RetryOptions options = NoJitter();
  options.deadline = seconds(5);
  options.attempt_timeout = seconds(2);
  RetryPolicy policy = Make(options);
  FakeClock clock;
  RetrySession session = policy.Begin(clock.Now());
  EXPECT_EQ(session.AttemptTimeout(clock.Now()), seconds(2));
  clock.Advance(milliseconds(3500));
  EXPECT_EQ(session.AttemptTimeout(clock.Now()), milliseconds(1500));
  EXPECT_EQ(session.TimeLeft(clock.Now()), milliseconds(1500));
  clock.Advance(seconds(10));
  EXPECT_EQ(session.AttemptTimeout(clock.Now()), Duration::zero());

  RetryPolicy unbounded = RetryPolicy::Default();
  RetrySession free_session = unbounded.Begin(clock.Now());
  EXPECT_EQ(free_session.AttemptTimeout(clock.Now()), std::nullopt);
}

TEST(RetrySessionTest, AFinishedSessionRepeatsItsStopDecision) {
  RetryPolicy policy = RetryPolicy::Default();
  RetrySession session = policy.Begin(TimePoint{});
  Decision first = session.OnOutcome(Outcome::Success(), TimePoint{});
  EXPECT_EQ(first.reason, StopReason::kSucceeded);
  EXPECT_TRUE(session.finished());
  Decision again = session.OnOutcome(Outcome::Failure(true), TimePoint{});
  EXPECT_EQ(again.reason, StopReason::kSucceeded);
  EXPECT_EQ(session.attempts(), 1);
}

TEST(RetrySessionTest, SeededPoliciesRepeatTheirDelaysUnseededOnesDiffer) {
  RetryOptions options;
  options.max_attempts = 6;
  options.seed = 42;
  RetryPolicy seeded = Make(options);
  RetryPolicy unseeded = Make(RetryOptions{});
  auto delays = [](const RetryPolicy& policy) {
    std::vector<Duration::rep> out;
    RetrySession session = policy.Begin(TimePoint{});
    for (int i = 0; i < 5; ++i) {
      Decision d = session.OnOutcome(Outcome::Http(503), TimePoint{});
      if (d.retry()) out.push_back(d.delay.count());
    }
    return out;
  };
  EXPECT_EQ(delays(seeded), delays(seeded));
  // tests/vectors/backoff.json "defaults_full_jitter" (seed 42).
  EXPECT_EQ(delays(seeded),
            (std::vector<Duration::rep>{16772594, 151592100, 544034728, 1479508712, 3173772525}));
  EXPECT_NE(delays(unseeded), delays(unseeded));
}

TEST(RetrySessionTest, UnsafeRequestsRetryOnlyWhenNothingWasSent) {
  RetryPolicy policy = Make(NoJitter());
  RetrySession unsafe = policy.Begin(TimePoint{}, /*replay_safe=*/false);
  EXPECT_TRUE(unsafe.OnOutcome(Outcome::Transport(ErrorKind::kConnectionRefused), TimePoint{})
                  .retry());
  EXPECT_TRUE(unsafe.OnOutcome(Outcome::Transport(ErrorKind::kDnsFailure), TimePoint{}).retry());
  Decision reset = unsafe.OnOutcome(Outcome::Transport(ErrorKind::kConnectionReset), TimePoint{});
  EXPECT_EQ(reset.reason, StopReason::kNotReplaySafe);
  EXPECT_EQ(reset.classification, Classification::kRetryable);
}

TEST(RetrySessionTest, RetryAfterBeyondTheMaximumStopsOrClamps) {
  RetryOptions options = NoJitter();
  options.retry_after_max = seconds(60);
  RetryPolicy stopping = Make(options);
  options.retry_after_overflow = RetryAfterOverflow::kClamp;
  RetryPolicy clamping = Make(options);

  RetrySession a = stopping.Begin(TimePoint{});
  Decision stop = a.OnOutcome(Outcome::Http(503, seconds(3600)), TimePoint{});
  EXPECT_EQ(stop.reason, StopReason::kRetryAfterTooLong);
  EXPECT_STREQ(StopReasonName(stop.reason), "retry_after_too_long");

  RetrySession b = clamping.Begin(TimePoint{});
  Decision wait = b.OnOutcome(Outcome::Http(503, seconds(3600)), TimePoint{});
  EXPECT_TRUE(wait.retry());
  EXPECT_EQ(wait.delay, seconds(60));
  EXPECT_TRUE(wait.from_retry_after);

  // Retry-After on a terminal status is irrelevant: a 404 stops.
  RetrySession c = stopping.Begin(TimePoint{});
  EXPECT_EQ(c.OnOutcome(Outcome::Http(404, seconds(1)), TimePoint{}).reason,
            StopReason::kTerminal);
}

TEST(RetrySessionTest, RetryAfterCanBeIgnored) {
  RetryOptions options = NoJitter();
  options.respect_retry_after = false;
  RetryPolicy policy = Make(options);
  RetrySession session = policy.Begin(TimePoint{});
  Decision d = session.OnOutcome(Outcome::Http(429, seconds(30)), TimePoint{});
  EXPECT_EQ(d.delay, milliseconds(200));
  EXPECT_FALSE(d.from_retry_after);
}

}  // namespace
}  // namespace mulligan
