#pragma once
// Prints tuner events: a live progress bar with ETA on a terminal, plain lines otherwise
// (logs, CI, pipes), so both people and scripts can follow a run.
#include <cstdio>
#include <string>

#include "ktune/tuner.h"

namespace ktune::cli {

class ProgressPrinter : public TuneObserver {
 public:
  explicit ProgressPrinter(std::FILE* out, bool quiet = false);
  void on_event(const TuneEvent& e) override;

 private:
  void draw_bar(const event::Progress& p);
  void clear_bar();
  std::FILE* out_;
  bool tty_;
  bool quiet_;
  bool bar_drawn_ = false;
  std::string current_problem_;
  std::string best_text_;
  double next_line_s_ = 0;
};

}  // namespace ktune::cli
