#pragma once
// ktune's own JSON tokenizer, for the files too large for nlohmann's (a registry of 100,000
// entries is 108 MB; nlohmann's lexer alone takes 0.84 s on it, four times this one). It drives
// the same SAX handler as nlohmann::json::sax_parse (LimitedBuilder, json_limited.h), with the
// same events in the same order, and must accept exactly the texts nlohmann accepts:
// tests/fuzz/fuzz_json_readers runs both on every input and aborts where they differ. Where they
// could differ, this follows nlohmann rather than RFC 8259 alone: a UTF-8 BOM is skipped, a NUL
// byte outside a string ends the text, positive integers are unsigned, integers beyond 64 bits
// are doubles and a double that overflows is refused.
#include <array>
#include <charconv>
#include <clocale>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace ktune::detail {

template <class Handler>
class FastJsonReader {
 public:
  FastJsonReader(std::string_view text, Handler& handler)
      : p_(text.data()), end_(text.data() + text.size()), h_(handler) {}

  // True when the text is one JSON value and the handler accepted every event. No message on
  // refusal: callers parse a refused text again with nlohmann's reader, whose message says where.
  bool parse() {
    if (!skip_bom()) return false;
    for (;;) {
      const std::size_t depth = open_.size();
      if (!value()) return false;
      if (open_.size() > depth) continue;  // a container's first member is next
      // After a value: close what it ends, until a comma asks for the next one.
      for (;;) {
        skip_space();
        if (open_.empty()) return peek() == '\0';
        const char c = peek();
        const bool in_object = open_.back() == '{';
        if (c == ',') {
          ++p_;
          if (in_object && !key()) return false;
          break;
        }
        if (c != (in_object ? '}' : ']')) return false;
        ++p_;
        open_.pop_back();
        if (!(in_object ? h_.end_object() : h_.end_array())) return false;
      }
    }
  }

 private:
  static constexpr std::size_t kUnknownSize = static_cast<std::size_t>(-1);

  // The end of the text, or a NUL byte (nlohmann's lexer takes both for the end of input).
  char peek() const { return p_ < end_ ? *p_ : '\0'; }
  bool digit() const { return p_ < end_ && *p_ >= '0' && *p_ <= '9'; }
  void digits() {
    while (digit()) ++p_;
  }
  void skip_space() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }
  bool skip_bom() {
    if (p_ == end_ || static_cast<unsigned char>(*p_) != 0xEF) return true;
    if (end_ - p_ < 3 || static_cast<unsigned char>(p_[1]) != 0xBB || static_cast<unsigned char>(p_[2]) != 0xBF)
      return false;
    p_ += 3;
    return true;
  }

  // One value; a container's opening only (its members come back through parse's loop).
  bool value() {
    skip_space();
    switch (peek()) {
      case '{':
        return open('{', '}');
      case '[':
        return open('[', ']');
      case '"':
        return string() && h_.string(str_);
      case 't':
        return literal("true") && h_.boolean(true);
      case 'f':
        return literal("false") && h_.boolean(false);
      case 'n':
        return literal("null") && h_.null();
      default:
        return number();
    }
  }
  bool open(char kind, char close) {
    ++p_;
    if (!(kind == '{' ? h_.start_object(kUnknownSize) : h_.start_array(kUnknownSize))) return false;
    skip_space();
    if (peek() == close) {
      ++p_;
      return kind == '{' ? h_.end_object() : h_.end_array();
    }
    open_.push_back(kind);
    return kind == '[' || key();
  }
  bool key() {
    skip_space();
    if (peek() != '"' || !string() || !h_.key(str_)) return false;
    skip_space();
    if (peek() != ':') return false;
    ++p_;
    return true;
  }
  bool literal(std::string_view word) {
    if (static_cast<std::size_t>(end_ - p_) < word.size() || std::memcmp(p_, word.data(), word.size()) != 0)
      return false;
    p_ += word.size();
    return true;
  }

  bool number() {
    const char* start = p_;
    const bool negative = peek() == '-';
    if (negative) ++p_;
    if (peek() == '0')
      ++p_;
    else if (digit())
      digits();
    else
      return false;
    bool integral = true;
    if (peek() == '.') {
      ++p_;
      if (!digit()) return false;
      digits();
      integral = false;
    }
    if (peek() == 'e' || peek() == 'E') {
      ++p_;
      if (peek() == '+' || peek() == '-') ++p_;
      if (!digit()) return false;
      digits();
      integral = false;
    }
    // As nlohmann: an integer that does not fit its type is read as a double.
    if (integral && negative) {
      std::int64_t v = 0;
      if (std::from_chars(start, p_, v).ec == std::errc()) return h_.number_integer(v);
    } else if (integral) {
      std::uint64_t v = 0;
      if (std::from_chars(start, p_, v).ec == std::errc()) return h_.number_unsigned(v);
    }
    double v = 0;
    const auto [at, ec] = std::from_chars(start, p_, v);
    if (ec == std::errc::result_out_of_range)
      v = strtod_as_nlohmann(start);
    else if (ec != std::errc() || at != p_)
      return false;
    return std::isfinite(v) && h_.number_float(v, no_text_);
  }
  // from_chars leaves the value unset past a double's range; nlohmann takes strtod's (the
  // infinity it then refuses, or the zero or subnormal of an underflow). Rare, so not fast.
  double strtod_as_nlohmann(const char* start) const {
    std::string token(start, p_);
    const char point = *std::localeconv()->decimal_point;
    for (char& c : token)
      if (c == '.') c = point;
    return std::strtod(token.c_str(), nullptr);
  }

  bool string() {
    ++p_;  // the opening quote
    str_.clear();
    for (;;) {
      const char* run = p_;
      while (p_ < end_ && kPlain[static_cast<unsigned char>(*p_)]) ++p_;
      str_.append(run, p_);
      if (p_ == end_) return false;
      const auto c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        ++p_;
        return true;
      }
      if (!(c == '\\' ? escape() : c >= 0x80 && utf8())) return false;  // below 0x20: unescaped control
    }
  }
  bool escape() {
    if (++p_ == end_) return false;
    const char c = *p_++;
    switch (c) {
      case '"':
      case '\\':
      case '/':
        str_ += c;
        return true;
      case 'b':
        str_ += '\b';
        return true;
      case 'f':
        str_ += '\f';
        return true;
      case 'n':
        str_ += '\n';
        return true;
      case 'r':
        str_ += '\r';
        return true;
      case 't':
        str_ += '\t';
        return true;
      case 'u':
        return code_point();
      default:
        return false;
    }
  }
  // After "\u": four hex digits, and for a high surrogate the "\u" of its low one.
  bool code_point() {
    std::uint32_t cp = 0;
    if (!hex4(cp) || (cp >= 0xDC00 && cp <= 0xDFFF)) return false;
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      std::uint32_t low = 0;
      if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return false;
      p_ += 2;
      if (!hex4(low) || low < 0xDC00 || low > 0xDFFF) return false;
      cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    }
    append_utf8(cp);
    return true;
  }
  bool hex4(std::uint32_t& out) {
    if (end_ - p_ < 4) return false;
    for (int i = 0; i < 4; ++i, ++p_) {
      const char c = *p_;
      const int d = c >= '0' && c <= '9'   ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                           : -1;
      if (d < 0) return false;
      out = out << 4 | static_cast<std::uint32_t>(d);
    }
    return true;
  }
  void append_utf8(std::uint32_t cp) {
    if (cp < 0x80) {
      str_ += static_cast<char>(cp);
    } else if (cp < 0x800) {
      str_ += static_cast<char>(0xC0 | cp >> 6);
      str_ += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      str_ += static_cast<char>(0xE0 | cp >> 12);
      str_ += static_cast<char>(0x80 | (cp >> 6 & 0x3F));
      str_ += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      str_ += static_cast<char>(0xF0 | cp >> 18);
      str_ += static_cast<char>(0x80 | (cp >> 12 & 0x3F));
      str_ += static_cast<char>(0x80 | (cp >> 6 & 0x3F));
      str_ += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  // One well-formed UTF-8 sequence of two to four bytes (RFC 3629: no overlong forms, no
  // surrogates, nothing past U+10FFFF), appended as it is.
  bool utf8() {
    const auto lead = static_cast<unsigned char>(*p_);
    int more = 0;
    unsigned char low = 0x80, high = 0xBF;  // the range of the second byte
    if (lead >= 0xC2 && lead <= 0xDF) {
      more = 1;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      more = 2;
      if (lead == 0xE0) low = 0xA0;
      if (lead == 0xED) high = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      more = 3;
      if (lead == 0xF0) low = 0x90;
      if (lead == 0xF4) high = 0x8F;
    } else {
      return false;
    }
    if (end_ - p_ <= more) return false;
    for (int i = 1; i <= more; ++i) {
      const auto b = static_cast<unsigned char>(p_[i]);
      if (b < (i == 1 ? low : 0x80) || b > (i == 1 ? high : 0xBF)) return false;
    }
    str_.append(p_, p_ + more + 1);
    p_ += more + 1;
    return true;
  }

  // Bytes a string holds as they are: printable ASCII but the quote and the backslash.
  static constexpr auto kPlain = [] {
    std::array<bool, 256> t{};
    for (int c = 0x20; c < 0x80; ++c) t[c] = c != '"' && c != '\\';
    return t;
  }();

  const char* p_;
  const char* end_;
  Handler& h_;
  std::string str_;         // the string or key being read, handed to the handler to take
  std::string no_text_;     // number_float's token text, which LimitedBuilder ignores
  std::vector<char> open_;  // '{' or '[' of each open container; the handler limits the depth
};

template <class Handler>
bool read_json(std::string_view text, Handler& handler) {
  return FastJsonReader<Handler>(text, handler).parse();
}

}  // namespace ktune::detail
