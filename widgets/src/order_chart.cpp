#include "ktune/widgets/order_chart.h"

#include <QLineSeries>
#include <algorithm>
#include <limits>

#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/trials_model.h"

namespace ktune::gui {

LatencyOrderChart::LatencyOrderChart(TrialsModel* model, QWidget* parent) : TrialChartView(model, parent) {}

QString LatencyOrderChart::xTitle() const { return tr("measured trial #"); }
QString LatencyOrderChart::title() const {
  return tr("%1 of every trial that ran, in run order").arg(yMetric().noun());
}

QString LatencyOrderChart::yTitle() const { return yMetric().label(); }

std::vector<TrialChartView::Group> LatencyOrderChart::groups() const {
  std::vector<Group> g;
  for (TrialStatus s : kAllTrialStatuses) g.push_back(Group{statusLegend(s), statusColor(s)});
  return g;
}

bool LatencyOrderChart::pointFor(const Trial& t, std::int64_t measured, double* x, double* y, int* group) const {
  *group = static_cast<int>(t.status);
  if (failed(t.status)) {
    // In run order: a failure that never got a time sits where the next measured trial goes.
    *x = static_cast<double>(measured >= 0 ? measured : measuredSoFar());
    *y = kFailedBand;
    return true;
  }
  if (measured < 0 || !yMetric().valueOf(t, y)) return false;
  *x = static_cast<double>(measured);
  return true;
}

void LatencyOrderChart::rebuildExtras(const std::vector<Point>& points) {
  // The search's best so far per shape (the winner, at the number it won by, is the star): a step
  // line with a vertex only where a new best appears, running on to that shape's last measured
  // trial. One series per shape (a single line would join the shapes), one legend entry for them.
  std::vector<std::string> keys;
  std::vector<QList<QPointF>> lines;
  std::vector<double> best, lastX;
  const bool up = yMetric().higherIsBetter();
  const auto better = [up](double a, double b) { return up ? a > b : a < b; };
  for (const Point& p : points) {
    if (yMetric().isCondition()) break;  // a clock has no best to follow
    const Trial& t = model()->trial(p.row);
    auto it = std::find(keys.begin(), keys.end(), t.problem_key);
    const auto k = static_cast<std::size_t>(it - keys.begin());
    if (it == keys.end()) {
      keys.push_back(t.problem_key);
      lines.emplace_back();
      best.push_back(up ? std::numeric_limits<double>::lowest() : std::numeric_limits<double>::max());
      lastX.push_back(p.x);
    }
    lastX[k] = std::max(lastX[k], p.x);
    if (t.status != TrialStatus::Ok || !better(p.y, best[k])) continue;
    if (!lines[k].isEmpty()) lines[k].append(QPointF(p.x, best[k]));
    lines[k].append(QPointF(p.x, p.y));
    best[k] = p.y;
  }
  while (bestLines_.size() < static_cast<qsizetype>(lines.size())) {
    auto* line = new QLineSeries(this);
    line->setPen(QPen(QColor(0x21, 0x21, 0x21), 1.8));
    line->setName(tr("search best so far"));
    addExtraSeries(line, bestLines_.isEmpty());
    bestLines_.append(line);
  }
  for (qsizetype i = 0; i < bestLines_.size(); ++i) {
    const auto k = static_cast<std::size_t>(i);
    QList<QPointF> line = k < lines.size() ? lines[k] : QList<QPointF>{};
    if (!line.isEmpty()) line.append(QPointF(lastX[k], line.last().y()));
    bestLines_[i]->replace(line);
  }
}

}  // namespace ktune::gui
