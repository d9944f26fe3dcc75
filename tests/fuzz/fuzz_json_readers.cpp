// ktune's own JSON reader (core/src/json_fast.h, the registry's) against nlohmann's, which every
// other file goes through: on any bytes both accept with identical values or both refuse with
// the same message, and a registry read through each is the same registry. Also holds save's
// writer to the dump(2) it replaces, on every registry that reads. Aborts at the first difference.
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "../../core/src/json_limited.h"
#include "../../core/src/registry_text.h"
#include "fuzz_input.h"
#include "json_compare.h"
#include "ktune/registry.h"

namespace {

using nlohmann::json;

[[noreturn]] void differ(const char* what) {
  std::fprintf(stderr, "fuzz_json_readers: the readers differ: %s\n", what);
  std::abort();
}

template <class Read>
std::optional<ktune::Registry> outcome(Read&& read, std::string& error) {
  try {
    return read();
  } catch (const ktune::InputError& e) {
    error = e.what();
  }
  return std::nullopt;
}

void compare_values(std::string_view text) {
  std::optional<json> slow, fast;
  std::string slow_error, fast_error;
  try {
    slow = ktune::detail::parse_limited<json>(text, "fuzz");
  } catch (const ktune::InputError& e) {
    slow_error = e.what();
  }
  try {
    fast = ktune::detail::parse_limited_fast<json>(text, "fuzz");
  } catch (const ktune::InputError& e) {
    fast_error = e.what();
  }
  if (slow.has_value() != fast.has_value()) differ(slow ? "only nlohmann's accepts" : "only ktune's accepts");
  if (slow && !ktune::fuzz::identical(*slow, *fast)) differ("the values");
  if (slow_error != fast_error) differ("the messages");
}

void compare_registries(std::string_view text) {
  std::string slow_error, fast_error;
  const auto slow = outcome([&] { return ktune::Registry::from_text(text, "fuzz", true); }, slow_error);
  const auto fast = outcome([&] { return ktune::Registry::from_text(text, "fuzz", false); }, fast_error);
  if (slow.has_value() != fast.has_value() || slow_error != fast_error) differ("the registry's refusal");
  if (!slow) return;
  const json j = slow->to_json();
  if (!ktune::fuzz::identical(j, fast->to_json()) || slow->migrations() != fast->migrations()) differ("the registries");
  if (ktune::registry_text(*fast) != j.dump(2) + "\n") differ("save's text and dump(2)");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = ktune::fuzz::text(data, size);
  compare_values(text);
  compare_registries(text);
  return 0;
}
