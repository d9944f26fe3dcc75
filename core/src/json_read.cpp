#include "ktune/json_read.h"

#include "json_limited.h"
#include "ktune/files.h"

namespace ktune {

namespace {

using detail::parse_limited;

template <class J>
std::string excerpt(const J& v) {
  constexpr std::size_t kMax = 60;
  // Depth is bounded by kMaxJsonDepth for parsed values; a long array is cut before dumping.
  std::string s;
  if (v.is_array() && v.size() > kMax) {
    s = std::to_string(v.size());
    s.insert(0, 1, '[');
    s += " values]";
  } else if (v.is_object() && v.size() > kMax) {
    s = std::to_string(v.size());
    s.insert(0, 1, '{');
    s += " members}";
  } else {
    s = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  if (s.size() > kMax) {
    s.resize(kMax - 3);
    s += "...";
  }
  return s;
}

}  // namespace

nlohmann::json parse_json(std::string_view text, const std::string& origin) {
  return parse_limited<nlohmann::json>(text, origin);
}

nlohmann::ordered_json parse_ordered_json(std::string_view text, const std::string& origin) {
  return parse_limited<nlohmann::ordered_json>(text, origin);
}

nlohmann::json read_json_file(const std::filesystem::path& file, const std::string& what) {
  const std::string origin = what + " " + file.string();
  return parse_json(read_text_file(file, what), origin);
}

nlohmann::ordered_json read_ordered_json_file(const std::filesystem::path& file, const std::string& what) {
  const std::string origin = what + " " + file.string();
  return parse_ordered_json(read_text_file(file, what), origin);
}

std::string json_excerpt(const nlohmann::json& v) { return excerpt(v); }
std::string json_excerpt(const nlohmann::ordered_json& v) { return excerpt(v); }

}  // namespace ktune
