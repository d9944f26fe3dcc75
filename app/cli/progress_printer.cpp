#include "progress_printer.h"

#include <unistd.h>

#include <cmath>

namespace ktune::cli {

namespace {

std::string format_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "--:--";
  const auto t = static_cast<long>(s + 0.5);
  char buf[32];
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", t / 3600, (t / 60) % 60, t % 60);
  else
    std::snprintf(buf, sizeof buf, "%ld:%02ld", t / 60, t % 60);
  return buf;
}

}  // namespace

ProgressPrinter::ProgressPrinter(std::FILE* out, bool quiet)
    : out_(out), tty_(isatty(fileno(out)) != 0), quiet_(quiet) {}

void ProgressPrinter::clear_bar() {
  if (bar_drawn_) {
    std::fputs("\r\033[K", out_);
    bar_drawn_ = false;
  }
}

void ProgressPrinter::draw_bar(const event::Progress& p) {
  const double frac = p.total ? static_cast<double>(p.done) / static_cast<double>(p.total) : 0.0;
  constexpr int width = 28;
  const int filled = static_cast<int>(frac * width);
  std::string bar(static_cast<std::size_t>(filled), '#');
  bar.resize(width, '.');
  std::fprintf(out_, "\r\033[K[%s] %llu/%llu %3.0f%%  %.1f trials/s  elapsed %s  ETA %s  %s", bar.c_str(),
               static_cast<unsigned long long>(p.done), static_cast<unsigned long long>(p.total), frac * 100,
               p.trials_per_s, format_duration(p.elapsed_s).c_str(), format_duration(p.eta_s).c_str(),
               best_text_.c_str());
  std::fflush(out_);
  bar_drawn_ = true;
}

void ProgressPrinter::on_event(const TuneEvent& e) {
  if (quiet_) return;
  std::visit(
      [this](const auto& ev) {
        using T = std::decay_t<decltype(ev)>;
        if constexpr (std::is_same_v<T, event::RunStarted>) {
          std::fprintf(out_, "tuning on %s (%s): %zu problem(s), %llu trials planned\n", ev.device.name.c_str(),
                       ev.device.backend.c_str(), ev.problems, static_cast<unsigned long long>(ev.planned_trials));
        } else if constexpr (std::is_same_v<T, event::ProblemStarted>) {
          clear_bar();
          current_problem_ = ev.problem.key();
          best_text_.clear();
          std::fprintf(out_, "problem %zu: %s  space %llu configs, %llu after pruning, %llu to measure\n", ev.index + 1,
                       current_problem_.c_str(), static_cast<unsigned long long>(ev.space.total),
                       static_cast<unsigned long long>(ev.space.valid), static_cast<unsigned long long>(ev.planned));
        } else if constexpr (std::is_same_v<T, event::TrialFinished>) {
          const Trial& t = ev.trial;
          if (t.status == TrialStatus::Pruned) return;  // counted in the problem's space line
          if (ev.new_best) best_text_ = "search best " + format_ns(t.stats.median_ns);
          if (!tty_ && ev.new_best) {
            std::fprintf(out_, "  new search best %s: %s\n", format_ns(t.stats.median_ns).c_str(),
                         t.config.key().c_str());
          } else if (t.status != TrialStatus::Ok && t.status != TrialStatus::SlowAbort) {
            clear_bar();
            std::string first_line = t.error.substr(0, t.error.find('\n'));
            if (first_line.size() > 160) first_line = first_line.substr(0, 157) + "...";
            std::fprintf(out_, "  %s %s: %s\n", to_string(t.status), t.config.key().c_str(), first_line.c_str());
          }
        } else if constexpr (std::is_same_v<T, event::Progress>) {
          if (tty_) {
            draw_bar(ev);
          } else if (ev.elapsed_s >= next_line_s_ || ev.done == ev.total) {
            // Logs get a progress line every few seconds rather than one per trial.
            next_line_s_ = ev.elapsed_s + 5;
            std::fprintf(out_, "  %llu/%llu trials, %.1f/s, elapsed %s, ETA %s\n",
                         static_cast<unsigned long long>(ev.done), static_cast<unsigned long long>(ev.total),
                         ev.trials_per_s, format_duration(ev.elapsed_s).c_str(), format_duration(ev.eta_s).c_str());
          }
        } else if constexpr (std::is_same_v<T, event::ProblemFinished>) {
          clear_bar();
          const auto& r = ev.result;
          if (r.best) {
            std::fprintf(out_, "  best %s: %s  median %s (%s; search %s)", r.problem.key().c_str(),
                         r.best->config.key().c_str(), format_ns(r.best->stats.median_ns).c_str(),
                         describe(r.choice.by), format_ns(r.choice.search.median_ns).c_str());
            if (r.best->tflops > 0) std::fprintf(out_, "  %.3f TFLOP/s", r.best->tflops);
            if (const auto x = r.speedup()) std::fprintf(out_, "  %.2fx %s", *x, r.baseline_name.c_str());
            if (const auto at = describe(conditions_of(r.best->metrics)); !at.empty())
              std::fprintf(out_, "  (at %s)", at.c_str());
            std::fputc('\n', out_);
          } else {
            std::fprintf(out_, "  no config of %s passed validation\n", r.problem.key().c_str());
          }
        } else if constexpr (std::is_same_v<T, event::Log>) {
          clear_bar();
          std::fprintf(out_, "%s\n", ev.message.c_str());
        } else if constexpr (std::is_same_v<T, event::RunFailed>) {
          clear_bar();
          std::fprintf(out_, "run failed: %s\n", ev.message.c_str());
        }
      },
      e);
  std::fflush(out_);
}

}  // namespace ktune::cli
