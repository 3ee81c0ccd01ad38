// core/src/config/hedging_fields.cc — the field table of a hedging object
// (fields.h, HedgingFields): the fields of HedgingOptions under their own
// names, as the Python @mulligan.hedge and the C ABI take them. (Added in
// 0.6.) The gRPC format's hedgingPolicy (gRFC A6's camelCase fields, no
// quantile) is read by grpc_format.cc; this table serves the objects that
// take mulligan's names (a `mulligan simulate` mode's "hedging").
#include <limits>

#include "fields.h"

namespace mulligan {
inline namespace v0 {
namespace internal {

const FieldTable<HedgingOptions>& HedgingFields() {
  using H = HedgingOptions;
  static const FieldTable<H> table = {
      {"max_attempts",
       [](Context& c, const std::string& p, const json::value& v, H& h) {
         // gRFC A6: more than 1; above kMaxHedgedAttempts (5) treated as 5.
         return ReadInt(c, p, v, 2, std::numeric_limits<int>::max(), h.max_attempts);
       }},
      {"hedging_delay",
       [](Context& c, const std::string& p, const json::value& v, H& h) {
         return ReadDuration(c, p, v, /*positive=*/false, h.hedging_delay);
       }},
      {"delay_quantile",
       [](Context& c, const std::string& p, const json::value& v, H& h) {
         double q = 0;
         if (!ReadNumber(c, p, v, 0, /*lo_open=*/true, 1, "a number in (0, 1]", q)) return false;
         h.delay_quantile = q;
         return true;
       }},
      {"quantile_window",
       [](Context& c, const std::string& p, const json::value& v, H& h) {
         return ReadInt(c, p, v, 1, 100000, h.quantile_window);
       }},
      {"quantile_min_samples",
       [](Context& c, const std::string& p, const json::value& v, H& h) {
         return ReadInt(c, p, v, 1, 100000, h.quantile_min_samples);
       }},
  };
  return table;
}

}  // namespace internal
}  // namespace v0
}  // namespace mulligan
