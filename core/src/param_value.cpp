#include "ktune/param_value.h"

#include <charconv>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>

#include "config_json.h"
#include "ktune/error.h"
#include "ktune/json_read.h"

namespace ktune {

const char* to_string(ParamValue::Kind k) {
  switch (k) {
    case ParamValue::Kind::Int:
      return "integer";
    case ParamValue::Kind::Bool:
      return "boolean";
    case ParamValue::Kind::String:
      break;
  }
  return "string";
}

namespace {

bool parse_int(std::string_view s, std::int64_t& out) {
  if (s.empty()) return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc{} && r.ptr == s.data() + s.size();
}

}  // namespace

std::int64_t ParamValue::as_int(std::string_view what) const {
  if (const auto* i = std::get_if<std::int64_t>(&v_)) return *i;
  if (const auto* b = std::get_if<bool>(&v_)) return *b ? 1 : 0;
  throw InputError(std::string(what) + " is the string \"" + std::get<std::string>(v_) +
                   "\", where an integer is needed");
}

const std::string& ParamValue::as_string() const {
  if (const auto* s = std::get_if<std::string>(&v_)) return *s;
  throw InputError("parameter value " + text() + " is not a string");
}

double ParamValue::number() const {
  if (const auto* s = std::get_if<std::string>(&v_)) return string_code(*s);
  return static_cast<double>(as_int());
}

std::string ParamValue::text() const {
  if (const auto* i = std::get_if<std::int64_t>(&v_)) return std::to_string(*i);
  if (const auto* b = std::get_if<bool>(&v_)) return *b ? "true" : "false";
  const auto& s = std::get<std::string>(v_);
  return s.empty() ? "\"\"" : s;
}

ParamValue ParamValue::parse(std::string_view text) {
  std::int64_t i = 0;
  if (parse_int(text, i)) return ParamValue(i);
  if (text == "true") return ParamValue(true);
  if (text == "false") return ParamValue(false);
  if (text == "\"\"") return ParamValue(std::string());
  return ParamValue(std::string(text));
}

nlohmann::json ParamValue::to_json() const {
  return std::visit([](const auto& v) { return nlohmann::json(v); }, v_);
}

ParamValue ParamValue::from_json(const nlohmann::json& j, const std::string& what) {
  return detail::param_value_from_json(j, [&] { return what; });
}

std::string string_value_problem(const std::string& s) {
  const std::string quoted = "the string \"" + s + "\"";
  for (const char c : s)
    if (c == ',' || c == '=' || c == '"' || c == '\'' || c == '\\' || static_cast<unsigned char>(c) < 0x20)
      return quoted +
             " holds a ',', '=', quote, backslash or control character, which config keys and kernel "
             "defines cannot carry; choose another spelling";
  std::int64_t i = 0;
  if (parse_int(s, i) || s == "true" || s == "false")
    return quoted + " reads as a number or a boolean; write it as one (64, true) or choose another spelling";
  return {};
}

double string_code(const std::string& s) {
  // One table per process: codes only need to agree between a config and its constraints.
  static std::mutex mutex;
  static std::map<std::string, double> codes;
  std::lock_guard lock(mutex);
  const auto [it, added] = codes.try_emplace(s, -1e15 - static_cast<double>(codes.size()));
  return it->second;
}

}  // namespace ktune
