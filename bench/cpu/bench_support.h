#pragma once
// What the CPU benchmarks share: their one flag, a family's space with some candidate lists
// replaced, and the tuner's progress on stderr.
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "ktune/search_space.h"
#include "ktune/tuner.h"

namespace ktune::bench {

// `--quick` or nothing: true / false; anything else prints the usage and gives nullopt.
inline std::optional<bool> quick_flag(int argc, char** argv, const char* program) {
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") != 0) {
      std::fprintf(stderr, "usage: %s [--quick]\n", program);
      return std::nullopt;
    }
    quick = true;
  }
  return quick;
}

// The space with some parameters' candidates replaced.
inline SearchSpace restrict_space(const SearchSpace& space,
                                  const std::map<std::string, std::vector<ParamValue>>& values) {
  std::vector<Parameter> params = space.parameters();
  for (auto& p : params)
    if (auto it = values.find(p.name); it != values.end()) p.values = it->second;
  return SearchSpace(std::move(params), space.constraints());
}

class Printer : public TuneObserver {
 public:
  void on_event(const TuneEvent& e) override {
    if (auto* s = std::get_if<event::ProblemStarted>(&e))
      std::fprintf(stderr, "  tuning %s: %llu of %llu configs valid\n", s->problem.key().c_str(),
                   static_cast<unsigned long long>(s->space.valid), static_cast<unsigned long long>(s->space.total));
    else if (auto* f = std::get_if<event::ProblemFinished>(&e); f && f->result.best)
      std::fprintf(stderr, "  best %s: %.3f ms\n", f->result.best->config.key().c_str(),
                   f->result.best->stats.median_ns / 1e6);
    else if (auto* l = std::get_if<event::Log>(&e))
      std::fprintf(stderr, "  %s\n", l->message.c_str());
  }
};

}  // namespace ktune::bench
