// Separate retry counts per kind (RetryOptions::max_kind_retries; urllib3's
// Retry(connect=, read=, status=, other=)), worked out by hand: each kind is
// bounded on its own, inside the total.
#include <gtest/gtest.h>

#include "mulligan/retry/policy.h"

namespace mulligan {
namespace {

RetryPolicy Policy(int attempts, int connect, int read, int status) {
  RetryOptions options;
  options.max_attempts = attempts;
  options.backoff.base = Duration::zero();
  options.max_kind_retries[static_cast<int>(RetryKind::kConnect)] = connect;
  options.max_kind_retries[static_cast<int>(RetryKind::kRead)] = read;
  options.max_kind_retries[static_cast<int>(RetryKind::kStatus)] = status;
  Result<RetryPolicy> p = RetryPolicy::Create(options);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return std::move(p).value();
}

TEST(RetryKinds, KindsOfOutcomes) {
  EXPECT_EQ(RetryKindOf(Outcome::Transport(ErrorKind::kConnectionRefused)), RetryKind::kConnect);
  EXPECT_EQ(RetryKindOf(Outcome::Transport(ErrorKind::kDnsFailure)), RetryKind::kConnect);
  EXPECT_EQ(RetryKindOf(Outcome::Transport(ErrorKind::kConnectTimeout)), RetryKind::kConnect);
  EXPECT_EQ(RetryKindOf(Outcome::Transport(ErrorKind::kConnectionReset)), RetryKind::kRead);
  EXPECT_EQ(RetryKindOf(Outcome::Transport(ErrorKind::kTimeout)), RetryKind::kRead);
  EXPECT_EQ(RetryKindOf(Outcome::Transport(ErrorKind::kTruncated)), RetryKind::kRead);
  EXPECT_EQ(RetryKindOf(Outcome::Http(503)), RetryKind::kStatus);
  EXPECT_EQ(RetryKindOf(Outcome::Grpc(14)), RetryKind::kStatus);
  EXPECT_EQ(RetryKindOf(Outcome::Failure(true)), RetryKind::kOther);
}

TEST(RetryKinds, EachKindHasItsOwnCountInsideTheTotal) {
  // 10 attempts in all; at most 1 connect retry, 2 read retries, 3 status retries.
  RetryPolicy p = Policy(10, 1, 2, 3);
  RetrySession s = p.Begin(TimePoint{});
  const Outcome refused = Outcome::Transport(ErrorKind::kConnectionRefused);
  const Outcome reset = Outcome::Transport(ErrorKind::kConnectionReset);
  const Outcome unavailable = Outcome::Http(503);
  EXPECT_TRUE(s.OnOutcome(refused, TimePoint{}).retry());      // connect 1 of 1
  EXPECT_TRUE(s.OnOutcome(unavailable, TimePoint{}).retry());  // status 1 of 3
  EXPECT_TRUE(s.OnOutcome(reset, TimePoint{}).retry());        // read 1 of 2
  EXPECT_TRUE(s.OnOutcome(unavailable, TimePoint{}).retry());  // status 2 of 3
  EXPECT_TRUE(s.OnOutcome(reset, TimePoint{}).retry());        // read 2 of 2
  EXPECT_TRUE(s.OnOutcome(Outcome::Failure(true), TimePoint{}).retry());  // other: unbounded
  Decision d = s.OnOutcome(refused, TimePoint{});  // a second connect retry: over its count
  EXPECT_EQ(d.reason, StopReason::kAttemptsExhausted);
  EXPECT_EQ(d.attempt, 7);

  // The total still bounds them: 3 attempts, generous kinds.
  RetryPolicy small = Policy(3, 5, 5, 5);
  RetrySession t = small.Begin(TimePoint{});
  EXPECT_TRUE(t.OnOutcome(unavailable, TimePoint{}).retry());
  EXPECT_TRUE(t.OnOutcome(unavailable, TimePoint{}).retry());
  EXPECT_EQ(t.OnOutcome(unavailable, TimePoint{}).reason, StopReason::kAttemptsExhausted);

  // 0: never retry that kind.
  RetryPolicy no_status = Policy(5, 5, 5, 0);
  RetrySession u = no_status.Begin(TimePoint{});
  EXPECT_EQ(u.OnOutcome(unavailable, TimePoint{}).reason, StopReason::kAttemptsExhausted);
}

TEST(RetryKinds, NegativeCountIsRefused) {
  RetryOptions options;
  options.max_kind_retries[static_cast<int>(RetryKind::kRead)] = -1;
  EXPECT_EQ(RetryPolicy::Create(options).status().message(),
            "max_read_retries must be >= 0 when set, got -1");
}

}  // namespace
}  // namespace mulligan
