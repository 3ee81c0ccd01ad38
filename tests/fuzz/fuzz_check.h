// tests/fuzz/fuzz_check.h — post-condition checks for the libFuzzer harnesses.
//
// A harness states what the parser under test promises (its header comment)
// and FUZZ_CHECK aborts when an input breaks the promise: libFuzzer reports
// an abort as a crash and saves the input, exactly as it does for a memory
// error found by AddressSanitizer or undefined behaviour found by UBSan.
//
// Also a small reader that splits the fuzzer's bytes into fields, so that one
// input can drive a parser with several arguments.

#ifndef MULLIGAN_TESTS_FUZZ_FUZZ_CHECK_H_
#define MULLIGAN_TESTS_FUZZ_FUZZ_CHECK_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

namespace mulligan_fuzz {

// Prints `what` (and the failed condition with its location) and aborts.
[[noreturn]] inline void Fail(const char* file, int line, const char* condition,
                              const std::string& what) {
  std::fprintf(stderr, "%s:%d: post-condition failed: %s\n  %s\n", file, line, condition,
               what.c_str());
  std::abort();
}

// Renders `s` for a failure message: printable ASCII kept, other bytes as \xNN.
inline std::string Printable(std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xf]);
    }
  }
  return out + "\"";
}

// Reads the fuzzer's bytes front to back. Past the end every Take* returns
// zero or empty, so a harness never needs to check the length itself.
class Input {
 public:
  Input(const uint8_t* data, size_t size)
      : data_(reinterpret_cast<const char*>(data)), size_(size) {}

  // One byte, or 0 past the end.
  uint8_t Byte() { return pos_ < size_ ? static_cast<uint8_t>(data_[pos_++]) : 0; }

  // Eight bytes as a little-endian integer (missing bytes are 0).
  uint64_t U64() {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(Byte()) << (8 * i);
    return v;
  }

  // The bytes up to the next `separator` (not included; it is consumed), or
  // to the end when there is none.
  std::string_view Field(char separator) {
    std::string_view rest(data_ + pos_, size_ - pos_);
    size_t end = rest.find(separator);
    if (end == std::string_view::npos) {
      pos_ = size_;
      return rest;
    }
    pos_ += end + 1;
    return rest.substr(0, end);
  }

  // The next `n` bytes (fewer at the end).
  std::string_view Bytes(size_t n) {
    n = n < size_ - pos_ ? n : size_ - pos_;
    std::string_view out(data_ + pos_, n);
    pos_ += n;
    return out;
  }

  // Everything not read yet.
  std::string_view Rest() {
    std::string_view rest(data_ + pos_, size_ - pos_);
    pos_ = size_;
    return rest;
  }

  bool AtEnd() const { return pos_ >= size_; }

 private:
  const char* data_;
  size_t size_;
  size_t pos_ = 0;
};

}  // namespace mulligan_fuzz

// Aborts with `what` (a std::string expression, evaluated only on failure)
// unless `condition` holds.
#define FUZZ_CHECK(condition, what)                                         \
  do {                                                                      \
    if (!(condition)) {                                                     \
      ::mulligan_fuzz::Fail(__FILE__, __LINE__, #condition, (what));        \
    }                                                                       \
  } while (0)

#endif  // MULLIGAN_TESTS_FUZZ_FUZZ_CHECK_H_
