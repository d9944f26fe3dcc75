#include "ktune/widgets/chart_metric.h"

#include <QCoreApplication>
#include <cmath>

#include "ktune/widgets/qt_types.h"

namespace ktune::gui {

ChartMetric::ChartMetric(const QString& recorded) : name_(recorded), key_(sstr(recorded)) {
  const QString n = recorded.toLower();
  // Kernel Tuner's observers name rates with a "/s" (GFLOP/s, GB/s) and efficiencies per watt
  // ("GFLOPS/W"); everything else it records (time, energy, power, temperature) is better low.
  higherIsBetter_ = n.endsWith(QLatin1String("/s")) || n.contains(QLatin1String("flops")) ||
                    n.contains(QLatin1String("/w")) || n.contains(QLatin1String("throughput"));
}

QString ChartMetric::label() const {
  return isLatency() ? QCoreApplication::translate("ChartMetric", "median latency (%1)").arg(unit_.name) : name_;
}

bool ChartMetric::valueOf(const Trial& t, double* y) const {
  if (isLatency()) {
    if (t.stats.count == 0) return false;
    *y = fromNs(t.stats.median_ns);
    return true;
  }
  const auto it = t.metrics.find(key_);
  if (it == t.metrics.end() || !std::isfinite(it->second)) return false;
  *y = it->second;
  return true;
}

}  // namespace ktune::gui
