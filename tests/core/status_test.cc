// Status and Result.
#include "mulligan/base/status.h"

#include <gtest/gtest.h>

namespace mulligan {
namespace {

TEST(StatusTest, CodesArePinned) {
  // These values are the C ABI's MULLIGAN_E_* numbers and must never change.
  EXPECT_EQ(static_cast<int>(StatusCode::kOk), 0);
  EXPECT_EQ(static_cast<int>(StatusCode::kInvalidArgument), 1);
  EXPECT_EQ(static_cast<int>(StatusCode::kNoMemory), 2);
  EXPECT_EQ(static_cast<int>(StatusCode::kInternal), 3);
  EXPECT_EQ(static_cast<int>(StatusCode::kCallback), 4);
  EXPECT_EQ(static_cast<int>(StatusCode::kRetriesExhausted), 5);
  EXPECT_EQ(static_cast<int>(StatusCode::kDeadlineExceeded), 6);
  EXPECT_EQ(static_cast<int>(StatusCode::kCircuitOpen), 7);
  EXPECT_EQ(static_cast<int>(StatusCode::kUnavailable), 8);
  EXPECT_EQ(static_cast<int>(StatusCode::kTransport), 9);
  EXPECT_EQ(static_cast<int>(StatusCode::kTimeout), 10);
}

TEST(StatusTest, ToStringAndPredicates) {
  EXPECT_EQ(OkStatus().ToString(), "ok");
  Status s = InvalidArgumentError("max_attempts must be >= 1, got 0");
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(IsInvalidArgument(s));
  EXPECT_EQ(s.ToString(), "invalid argument: max_attempts must be >= 1, got 0");
  EXPECT_EQ(Status(StatusCode::kOk, "ignored").message(), "");
  EXPECT_STREQ(StatusCodeName(static_cast<StatusCode>(99)), "unknown status");
}

// Appended in 0.5 (issue 16): a state backend that failed closed.
TEST(StatusTest, StateUnavailableIsCode15) {
  EXPECT_EQ(static_cast<int>(StatusCode::kStateUnavailable), 15);
  Status s = StateUnavailableError("redis at 127.0.0.1:6379 unreachable");
  EXPECT_TRUE(IsStateUnavailable(s));
  EXPECT_FALSE(IsStateUnavailable(UnavailableError("x")));
  EXPECT_EQ(s.ToString(), "state backend unavailable: redis at 127.0.0.1:6379 unreachable");
}

TEST(ResultTest, HoldsAValueOrAnError) {
  Result<int> good = 7;
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 7);
  EXPECT_TRUE(good.status().ok());
  Result<int> bad = TimeoutError("slow");
  EXPECT_FALSE(bad.ok());
  EXPECT_TRUE(IsTimeout(bad.status()));
  Result<int> misuse = OkStatus();
  EXPECT_FALSE(misuse.ok());
  EXPECT_EQ(misuse.status().code(), StatusCode::kInternal);
}

}  // namespace
}  // namespace mulligan
