#include "ktune/widgets/chart_metric.h"

#include <QCoreApplication>
#include <cmath>
#include <limits>

#include "ktune/conditions.h"
#include "ktune/widgets/qt_types.h"

namespace ktune::gui {

namespace {
QString tr(const char* text) { return QCoreApplication::translate("ChartMetric", text); }
}  // namespace

ChartMetric::ChartMetric(const QString& name)
    : name_(name), key_(sstr(name)), vsBest_(name == vsBestName()), condition_(is_condition(key_)) {
  const QString n = name.toLower();
  // Kernel Tuner's observers name rates with a "/s" (GFLOP/s, GB/s) and efficiencies per watt
  // ("GFLOPS/W"), workers their ratios over a baseline "speedup..." (speedup_vs_torch);
  // everything else recorded (time, energy, power, temperature) is better low.
  higherIsBetter_ = !vsBest_ && (n.endsWith(QLatin1String("/s")) || n.contains(QLatin1String("flops")) ||
                                 n.contains(QLatin1String("/w")) || n.contains(QLatin1String("throughput")) ||
                                 n.startsWith(QLatin1String("speedup")));
}

QString ChartMetric::label() const {
  if (isLatency()) return tr("median latency (%1)").arg(unit_.name);
  if (vsBest_) return tr("× best (median ÷ shape's best)");
  return name_;
}

QString ChartMetric::noun() const {
  if (isLatency()) return tr("Latency");
  if (vsBest_) return tr("Distance from best");
  return name_;
}

double ChartMetric::fromNs(double ns, const std::string& problemKey) const {
  if (!vsBest_) return fromNs(ns);
  const auto it = best_.find(problemKey);
  return it == best_.end() ? std::numeric_limits<double>::quiet_NaN() : ns / it->second;
}

bool ChartMetric::valueOf(const Trial& t, double* y) const {
  if (isTime()) {
    if (t.stats.count == 0) return false;
    *y = fromNs(t.stats.median_ns, t.problem_key);
    return std::isfinite(*y);
  }
  const auto it = t.metrics.find(key_);
  if (it == t.metrics.end() || !std::isfinite(it->second)) return false;
  *y = it->second;
  return true;
}

bool ChartMetric::learnBests(const std::vector<Trial>& trials, std::size_t from) {
  bool moved = false;
  for (std::size_t i = from; i < trials.size(); ++i) moved = note_best_median(trials[i], best_) || moved;
  return moved;
}

}  // namespace ktune::gui
