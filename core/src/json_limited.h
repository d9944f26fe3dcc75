#pragma once
// The parse behind parse_json and parse_ordered_json (json_read.h), a template so that a test
// can run it on a JSON type that counts its work: private to the core.
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "json_fast.h"
#include "ktune/error.h"
#include "ktune/json_read.h"

namespace ktune::detail {

// "[json.exception.parse_error.101] parse error at line 1, column 3: ..." -> "parse error at ...":
// the bracketed id means nothing to a user.
inline std::string library_message(const nlohmann::json::exception& e) {
  std::string m = e.what();
  if (!m.empty() && m.front() == '[') {
    const auto close = m.find("] ");
    if (close != std::string::npos) m = m.substr(close + 2);
  }
  return m;
}

// The line (1-based) of the byte at which `text` opens its (limit + 1)-th nested level, 0 when it
// never does. Only the error path calls it, once the parser has refused that level: the text up
// to there is valid JSON, so brackets inside strings are the only ones to skip.
inline std::size_t line_too_deep(std::string_view text, int limit) {
  std::size_t line = 1;
  int depth = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (c == '\n') ++line;
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > limit) return line;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return 0;
}

// Builds the value from nlohmann's SAX events, refusing a container nested deeper than
// kMaxJsonDepth before it is built. Not the parser callback: with one, nlohmann walks the parent
// container after every child that closes (to drop discarded values), which made a registry of n
// entries load in O(n^2). The last key read says where a parse error is (a number that
// overflows a double, 1e400, is refused by the parser before any reader could name its field).
template <class J>
class LimitedBuilder {
 public:
  using number_integer_t = typename J::number_integer_t;
  using number_unsigned_t = typename J::number_unsigned_t;
  using number_float_t = typename J::number_float_t;
  using string_t = typename J::string_t;
  using binary_t = typename J::binary_t;

  // Called for each container at `level` (the top-level value is level 1) that only objects
  // hold, with the keys that lead to it, once it is complete; returning true drops it from the
  // result: a caller that turns each entry of a large file into its own type never holds the
  // whole file as JSON values.
  using HandOff = std::function<bool(const std::vector<std::string>& keys, J& value)>;

  explicit LimitedBuilder(J& root, HandOff hand_off = {}, std::size_t level = 0)
      : root_(root), hand_off_(std::move(hand_off)), level_(level), keys_(level > 0 ? level - 1 : 0) {}

  const std::string& last_key() const { return last_key_; }
  bool too_deep() const { return too_deep_; }

  bool null() { return add(nullptr); }
  bool boolean(bool v) { return add(v); }
  bool number_integer(number_integer_t v) { return add(v); }
  bool number_unsigned(number_unsigned_t v) { return add(v); }
  bool number_float(number_float_t v, const string_t&) { return add(v); }
  bool string(string_t& v) { return add(std::move(v)); }
  bool binary(binary_t& v) { return add(J::binary(std::move(v))); }
  bool start_object(std::size_t) { return open(J::value_t::object); }
  bool start_array(std::size_t) { return open(J::value_t::array); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(string_t& k) {
    last_key_ = k;
    if (open_.size() < level_) keys_[open_.size() - 1] = k;
    // The last of duplicate keys wins, as in nlohmann's own parser.
    if constexpr (kKeptInOrder)
      member_ = &ordered_member(k);
    else
      member_ = &(*open_.back())[k];
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::json::exception& e) {
    error_ = library_message(e);
    return false;
  }
  // The library's words for a syntax error, or empty.
  const std::string& error() const { return error_; }

 private:
  // ordered_json's objects are vectors searched from the start for every key (operator[]): an
  // object of n members, a Kernel Tuner cache's configs, would take O(n^2). Past a few members
  // they are searched through an index of their own while they are read.
  static constexpr bool kKeptInOrder = requires(typename J::object_t o) { o.emplace_back(string_t(), J()); };
  static constexpr std::size_t kIndexFrom = 16;

  J& ordered_member(const string_t& k) {
    auto& members = open_.back()->template get_ref<typename J::object_t&>();
    auto& index = index_.back();
    if (members.size() < kIndexFrom) {
      for (auto& m : members)
        if (m.first == k) return m.second;
    } else {
      if (index.empty())
        for (std::size_t i = 0; i < members.size(); ++i) index.emplace(members.begin()[i].first, i);
      const auto [at, added] = index.emplace(k, members.size());
      if (!added) return members.begin()[at->second].second;
    }
    members.emplace_back(k, J());
    return members.back().second;
  }

  // Where the next value goes: the root, the member whose key was just read, or an array's end.
  template <class V>
  J* place(V&& v) {
    if (open_.empty()) {
      root_ = J(std::forward<V>(v));
      return &root_;
    }
    J& parent = *open_.back();
    if (parent.is_array()) {
      parent.push_back(J(std::forward<V>(v)));
      return &parent.back();
    }
    *member_ = J(std::forward<V>(v));
    return member_;
  }
  template <class V>
  bool add(V&& v) {
    place(std::forward<V>(v));
    return true;
  }
  bool open(typename J::value_t type) {
    // The parser itself is iterative; the values it builds are not (copy, compare, dump).
    if (static_cast<int>(open_.size()) >= kMaxJsonDepth) {
      too_deep_ = true;
      return false;
    }
    open_.push_back(place(type));
    if constexpr (kKeptInOrder) index_.emplace_back();
    return true;
  }
  bool close() {
    if constexpr (kKeptInOrder) index_.pop_back();
    // Not for ordered objects: the erase would shift the members that their index points at.
    if (!kKeptInOrder && hand_off_ && level_ > 1 && open_.size() == level_ && held_by_objects() &&
        hand_off_(keys_, *open_.back()))
      open_[level_ - 2]->erase(keys_[level_ - 2]);
    open_.pop_back();
    return true;
  }
  bool held_by_objects() const {
    for (std::size_t i = 0; i + 1 < open_.size(); ++i)
      if (!open_[i]->is_object()) return false;
    return true;
  }

  J& root_;
  HandOff hand_off_;
  std::size_t level_;
  std::vector<std::string> keys_;                                 // the last key read at each level above level_
  std::vector<J*> open_;                                          // the containers being filled, outermost first
  std::vector<std::unordered_map<string_t, std::size_t>> index_;  // of the open ordered objects
  J* member_ = nullptr;
  std::string last_key_, error_;
  bool too_deep_ = false;
};

template <class J>
J parse_limited(std::string_view text, const std::string& origin, typename LimitedBuilder<J>::HandOff hand_off = {},
                std::size_t level = 0) {
  J out;
  LimitedBuilder<J> builder(out, std::move(hand_off), level);
  if (J::sax_parse(text.begin(), text.end(), &builder)) return out;
  if (builder.too_deep())
    throw InputError(origin + ": nested deeper than " + std::to_string(kMaxJsonDepth) + " levels at line " +
                     std::to_string(line_too_deep(text, kMaxJsonDepth)) +
                     "; no ktune file is, check that this is the file you meant");
  const std::string& key = builder.last_key();
  throw InputError(origin + ": not valid JSON (" + builder.error() +
                   (key.empty() ? "" : ", after the key \"" + key + "\"") + ")");
}

// Reads `text` into `handler` (LimitedBuilder, or a reader's own that keeps its limits) through
// ktune's own tokenizer (json_fast.h): the same events as nlohmann's, several times faster on
// large files. A text it refuses is parsed again by nlohmann's reader for the error, so that
// messages say where and why as every other reader's do.
template <class J, class Handler>
void read_fast(std::string_view text, const std::string& origin, Handler& handler) {
  if (read_json(text, handler)) return;
  parse_limited<J>(text, origin);  // throws, but for a text the readers disagree on (a bug)
  throw InputError(origin + ": not read by ktune's JSON reader although nlohmann's reads it (a ktune bug: " +
                   "please report it with the file)");
}

// parse_limited through ktune's own tokenizer: the same handler, events and result.
template <class J>
J parse_limited_fast(std::string_view text, const std::string& origin,
                     typename LimitedBuilder<J>::HandOff hand_off = {}, std::size_t level = 0) {
  J out;
  LimitedBuilder<J> builder(out, std::move(hand_off), level);
  read_fast<J>(text, origin, builder);
  return out;
}

}  // namespace ktune::detail
