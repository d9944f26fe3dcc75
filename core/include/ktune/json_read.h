#pragma once
// Every JSON input of ktune (registry, run metadata and results, search spaces, kernel specs,
// workbench sessions) is read here, one way, so each gets the same guards:
//  - a nesting limit: nlohmann copies, compares and dumps values recursively, so a file nested
//    a million levels deep would overflow the stack; ktune's own files are a few levels deep;
//  - numbers that do not fit (1e400), bad UTF-8 and syntax errors become InputError naming the
//    input, never a raw library error;
//  - a directory or unreadable path given for a file is named as such.
// Errors in the fields themselves are reported by the readers of each format, through the
// typed, path-naming reads of core/src/json_path.h.
#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace ktune {

// Deepest nesting accepted (the top-level value is depth 1).
inline constexpr int kMaxJsonDepth = 64;

// Parses `text`; `origin` names it in errors ("kernel spec foo.json"). Throws InputError.
nlohmann::json parse_json(std::string_view text, const std::string& origin);
// Same, keeping objects' members in the order written (search spaces: parameter order matters).
nlohmann::ordered_json parse_ordered_json(std::string_view text, const std::string& origin);
// Reads `file` and parses it; errors read "<what> <file>: ...". Throws InputError.
nlohmann::json read_json_file(const std::filesystem::path& file, const std::string& what);
nlohmann::ordered_json read_ordered_json_file(const std::filesystem::path& file, const std::string& what);

// A short quote of a value for an error message (at most ~60 characters): never the whole of a
// large or deeply nested value.
std::string json_excerpt(const nlohmann::json& v);
std::string json_excerpt(const nlohmann::ordered_json& v);

}  // namespace ktune
