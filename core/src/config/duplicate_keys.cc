// core/src/config/duplicate_keys.cc — the repeated-key check of ParseConfig
// (see duplicate_keys.h): a second pass of Boost.JSON's SAX parser that only
// tracks the keys of each open object.
#include "duplicate_keys.h"

#include <cstdint>
#include <system_error>
#include <unordered_set>
#include <vector>

#include <boost/json.hpp>
#include <boost/json/basic_parser_impl.hpp>

namespace mulligan {
inline namespace v0 {
namespace internal {
namespace {

namespace json = boost::json;

// A handler for json::basic_parser that stops at the first key an object
// names twice.
class DuplicateKeyCheck {
 public:
  static constexpr std::size_t max_array_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_object_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_string_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_key_size = static_cast<std::size_t>(-1);

  // Whether a key was repeated, and which (it may be the empty key).
  bool found() const { return found_; }
  const std::string& duplicate() const { return duplicate_; }

  bool on_document_begin(boost::system::error_code&) { return true; }
  bool on_document_end(boost::system::error_code&) { return true; }
  bool on_array_begin(boost::system::error_code&) { return true; }
  bool on_array_end(std::size_t, boost::system::error_code&) { return true; }
  bool on_object_begin(boost::system::error_code&) {
    keys_.emplace_back();
    return true;
  }
  bool on_object_end(std::size_t, boost::system::error_code&) {
    keys_.pop_back();
    return true;
  }
  bool on_string_part(json::string_view, std::size_t, boost::system::error_code&) { return true; }
  bool on_string(json::string_view, std::size_t, boost::system::error_code&) { return true; }
  bool on_key_part(json::string_view part, std::size_t, boost::system::error_code&) {
    key_.append(part.data(), part.size());
    return true;
  }
  bool on_key(json::string_view last, std::size_t, boost::system::error_code& ec) {
    key_.append(last.data(), last.size());
    if (!keys_.back().insert(key_).second) {
      found_ = true;
      duplicate_ = key_;
      ec = std::make_error_code(std::errc::invalid_argument);
      return false;
    }
    key_.clear();
    return true;
  }
  bool on_number_part(json::string_view, boost::system::error_code&) { return true; }
  bool on_int64(int64_t, json::string_view, boost::system::error_code&) { return true; }
  bool on_uint64(uint64_t, json::string_view, boost::system::error_code&) { return true; }
  bool on_double(double, json::string_view, boost::system::error_code&) { return true; }
  bool on_bool(bool, boost::system::error_code&) { return true; }
  bool on_null(boost::system::error_code&) { return true; }
  bool on_comment_part(json::string_view, boost::system::error_code&) { return true; }
  bool on_comment(json::string_view, boost::system::error_code&) { return true; }

 private:
  std::vector<std::unordered_set<std::string>> keys_;  // per open object
  std::string key_;                                    // the key being read
  std::string duplicate_;
  bool found_ = false;
};

}  // namespace

std::optional<std::pair<std::string, size_t>> FindDuplicateKey(std::string_view text) {
  json::basic_parser<DuplicateKeyCheck> parser(json::parse_options{});
  boost::system::error_code ec;
  const size_t consumed = parser.write_some(false, text.data(), text.size(), ec);
  if (!ec || !parser.handler().found()) return std::nullopt;
  return std::make_pair(parser.handler().duplicate(), consumed);
}

}  // namespace internal
}  // namespace v0
}  // namespace mulligan
