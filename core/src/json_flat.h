#pragma once
// One JSON value held as a flat array of nodes in one buffer, for readers that take a large file
// one small value at a time (a registry's entries): built from the tokenizer's events without an
// allocation per member (nlohmann's values cost more to build and free than the RegistryEntry
// read from them), and reused for the next value. Read through JsonPath (json_path.h) as
// nlohmann::json is, with nlohmann's semantics: an object's members in key order, the last of
// duplicate keys winning.
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "ktune/json_read.h"

namespace ktune::detail {

class FlatJson;

class FlatNode {
 public:
  enum class Kind : std::uint8_t { null, boolean, integer, unsigned_integer, floating, string, object, array };

  bool is_object() const { return kind_ == Kind::object; }
  bool is_array() const { return kind_ == Kind::array; }
  bool is_string() const { return kind_ == Kind::string; }
  bool is_boolean() const { return kind_ == Kind::boolean; }
  bool is_number_integer() const { return kind_ == Kind::integer || kind_ == Kind::unsigned_integer; }
  bool is_number_unsigned() const { return kind_ == Kind::unsigned_integer; }
  bool is_number() const { return is_number_integer() || kind_ == Kind::floating; }

  // As nlohmann's get<T>() for the types JsonPath reads, after it checked the kind.
  template <class T>
  T get() const {
    if constexpr (std::is_same_v<T, std::string>) {
      return std::string(text(value_.text));
    } else if constexpr (std::is_same_v<T, bool>) {
      return value_.boolean;
    } else {
      return kind_ == Kind::integer            ? static_cast<T>(value_.integer)
             : kind_ == Kind::unsigned_integer ? static_cast<T>(value_.unsigned_integer)
                                               : static_cast<T>(value_.floating);
    }
  }

  // The key under which its object holds it.
  std::string_view key() const { return text(key_); }
  // An object's or array's members, in the order written (duplicates included).
  template <class F>
  void each_child(F&& f) const;
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // An object's member, the last of its duplicates; nullptr if none.
  const FlatNode* member(std::string_view key) const {
    const FlatNode* found = nullptr;
    each_child([&](const FlatNode& m) {
      if (m.key() == key) found = &m;
    });
    return found;
  }

 private:
  friend class FlatJson;
  struct Span {
    std::uint32_t at = 0, size = 0;
  };
  std::string_view text(Span s) const;

  const FlatJson* doc_ = nullptr;
  Kind kind_ = Kind::null;
  std::uint32_t end_ = 0;   // the index after its last descendant: its next sibling's
  std::uint32_t size_ = 0;  // a container's members
  Span key_;
  union {
    bool boolean;
    std::int64_t integer;
    std::uint64_t unsigned_integer;
    double floating;
    Span text;
  } value_{};
};

class FlatJson {
 public:
  const FlatNode& root() const { return nodes_.front(); }
  const FlatNode& at(std::uint32_t i) const { return nodes_[i]; }
  std::string_view text(FlatNode::Span s) const { return std::string_view(text_).substr(s.at, s.size); }

  // Building, in the order of the tokenizer's events.
  void clear() {
    nodes_.clear();
    open_.clear();
    text_.clear();
  }
  void key(std::string_view k) { key_ = append(k); }
  void null() { add(FlatNode::Kind::null); }
  void boolean(bool v) { add(FlatNode::Kind::boolean).value_.boolean = v; }
  void integer(std::int64_t v) { add(FlatNode::Kind::integer).value_.integer = v; }
  void unsigned_integer(std::uint64_t v) { add(FlatNode::Kind::unsigned_integer).value_.unsigned_integer = v; }
  void floating(double v) { add(FlatNode::Kind::floating).value_.floating = v; }
  void string(std::string_view v) { add(FlatNode::Kind::string).value_.text = append(v); }
  void open(bool object) {
    add(object ? FlatNode::Kind::object : FlatNode::Kind::array);
    open_.push_back(static_cast<std::uint32_t>(nodes_.size() - 1));
  }
  void close() {
    nodes_[open_.back()].end_ = static_cast<std::uint32_t>(nodes_.size());
    open_.pop_back();
  }
  std::size_t depth() const { return open_.size(); }

 private:
  FlatNode::Span append(std::string_view s) {
    const FlatNode::Span span{static_cast<std::uint32_t>(text_.size()), static_cast<std::uint32_t>(s.size())};
    text_.append(s);
    return span;
  }
  FlatNode& add(FlatNode::Kind kind) {
    FlatNode& n = nodes_.emplace_back();
    n.doc_ = this;
    n.kind_ = kind;
    n.end_ = static_cast<std::uint32_t>(nodes_.size());
    if (!open_.empty()) {
      FlatNode& parent = nodes_[open_.back()];
      ++parent.size_;
      if (parent.kind_ == FlatNode::Kind::object) n.key_ = key_;
    }
    return n;
  }

  std::vector<FlatNode> nodes_;
  std::vector<std::uint32_t> open_;  // the containers being filled
  std::string text_;                 // keys and strings
  FlatNode::Span key_;               // the key of the member read next
};

inline std::string_view FlatNode::text(Span s) const { return doc_->text(s); }

template <class F>
void FlatNode::each_child(F&& f) const {
  const auto self = static_cast<std::uint32_t>(this - &doc_->root());
  for (std::uint32_t i = self + 1; i < end_; i = doc_->at(i).end_) f(doc_->at(i));
}

// The same value as nlohmann's, for what only nlohmann's values take (error excerpts, Config).
inline nlohmann::json to_nlohmann(const FlatNode& n) {
  if (n.is_object()) {
    nlohmann::json j = nlohmann::json::object();
    n.each_child([&](const FlatNode& m) { j[std::string(m.key())] = to_nlohmann(m); });
    return j;
  }
  if (n.is_array()) {
    nlohmann::json j = nlohmann::json::array();
    n.each_child([&](const FlatNode& m) { j.push_back(to_nlohmann(m)); });
    return j;
  }
  if (n.is_string()) return n.get<std::string>();
  if (n.is_boolean()) return n.get<bool>();
  if (n.is_number_unsigned()) return n.get<std::uint64_t>();
  if (n.is_number_integer()) return n.get<std::int64_t>();
  if (n.is_number()) return n.get<double>();
  return nullptr;
}

// Calls f(key, value) for each member of an object in nlohmann's order (by key, the last of
// duplicates), of a flat value as of nlohmann's: readers whose result keeps that order (a config's
// parameters, an entry's versions) read both the same.
template <class J, class F>
void each_member(const J& j, F&& f) {
  if constexpr (std::is_same_v<J, FlatNode>) {
    std::vector<const FlatNode*> members;
    members.reserve(j.size());
    j.each_child([&](const FlatNode& m) { members.push_back(&m); });
    std::stable_sort(members.begin(), members.end(),
                     [](const FlatNode* a, const FlatNode* b) { return a->key() < b->key(); });
    for (std::size_t i = 0; i < members.size(); ++i)
      if (i + 1 == members.size() || members[i + 1]->key() != members[i]->key()) f(members[i]->key(), *members[i]);
  } else {
    for (auto it = j.begin(); it != j.end(); ++it) f(std::string_view(it.key()), it.value());
  }
}

}  // namespace ktune::detail

namespace ktune {
inline std::string json_excerpt(const detail::FlatNode& n) { return json_excerpt(detail::to_nlohmann(n)); }
}  // namespace ktune
