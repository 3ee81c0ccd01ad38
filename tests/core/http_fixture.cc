// tests/core/http_fixture.cc — registers the nginx environment of
// http_fixture.h, once for the HTTP test executable.
#include "http_fixture.h"

namespace mulligan {
namespace http_test {
namespace {

const ::testing::Environment* const g_env =
    ::testing::AddGlobalTestEnvironment(new NginxEnvironment);

}  // namespace
}  // namespace http_test
}  // namespace mulligan
