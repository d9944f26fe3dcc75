#include "ktune/json_read.h"

#include "ktune/error.h"
#include "ktune/files.h"

namespace ktune {

namespace {

// "[json.exception.parse_error.101] parse error at line 1, column 3: ..." -> "parse error at ...":
// the bracketed id means nothing to a user.
std::string library_message(const nlohmann::json::exception& e) {
  std::string m = e.what();
  if (!m.empty() && m.front() == '[') {
    const auto close = m.find("] ");
    if (close != std::string::npos) m = m.substr(close + 2);
  }
  return m;
}

template <class J>
J parse_limited(std::string_view text, const std::string& origin) {
  // The parser itself is iterative; the callback sees each container open with the depth of its
  // parent, and stops the parse before a value too deep to handle is built.
  // The last key read says where a parse error is (a number that overflows a double, 1e400, is
  // refused by the parser before any reader could name its field).
  std::string last_key;
  const typename J::parser_callback_t limit = [&origin, &last_key](int depth, nlohmann::json::parse_event_t event,
                                                                   J& parsed) {
    if (event == nlohmann::json::parse_event_t::key) last_key = parsed.template get<std::string>();
    if ((event == nlohmann::json::parse_event_t::object_start || event == nlohmann::json::parse_event_t::array_start) &&
        depth >= kMaxJsonDepth)
      throw InputError(origin + ": nested deeper than " + std::to_string(kMaxJsonDepth) +
                       " levels; no ktune file is, check that this is the file you meant");
    return true;
  };
  try {
    return J::parse(text.begin(), text.end(), limit);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(origin + ": not valid JSON (" + library_message(e) +
                     (last_key.empty() ? "" : ", after the key \"" + last_key + "\"") + ")");
  }
}

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
