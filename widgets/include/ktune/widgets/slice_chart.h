#pragma once
// SliceChart: one parameter's slice of a shape (Optuna's slice plot, summarised per value, see
// ktune/parameter_slice.h): at each value the parameter took, a box over the middle half of the
// ok trials' latencies (quartiles) with the median across it, a whisker from the best to the
// slowest, and a dot at the best; an arrow up beside it at the fastest slow_abort trial (stopped
// early: a lower bound), "✕n" over a value where n trials failed (their statuses on hover), and
// the value's column tinted where nothing ran to the end. The x axis follows the parameter's
// kind (chart_axes.h: strings and booleans as categories, powers of two on log2, other integers
// at their values); times in the page's unit, on a log axis when asked. Trials marked elsewhere
// (the parallel coordinates' brush) are orange rings at their own times.
#include <QChartView>
#include <utility>
#include <vector>

#include "ktune/parameter_slice.h"
#include "ktune/widgets/chart_axes.h"

class QCategoryAxis;
class QLineSeries;
class QScatterSeries;

namespace ktune::gui {

class TrialsModel;

class SliceChart : public QChartView {
  Q_OBJECT
 public:
  explicit SliceChart(const TrialsModel* model, QWidget* parent = nullptr);

  // `unit`: the times' unit, shared by a page's slices; `title`: the parameter and what it is.
  void setSlice(ParameterSlice slice, const TimeUnit& unit, bool logY, const QString& title);
  // Trials to ring: each one's value of this parameter and its median.
  void setMarked(const std::vector<std::pair<ParamValue, double>>& marks);

  const ParameterSlice& slice() const { return slice_; }
  ParameterAxis::Kind axisKind() const { return axis_.kind(); }
  bool logScale() const { return log_; }
  QStringList xTickLabels() const;
  // Where value i sits on the x axis, in chart units.
  double xOf(std::size_t i) const { return xs_[i]; }
  // What hovering value i says: its counts, best, quartiles, slowest, slow_abort and failures.
  QString describe(std::size_t i) const;
  // The mark over value i: "✕3" where 3 trials failed; empty where none did.
  static QString failureMark(const SliceValue& v);
  int markedCount() const;
  QSize sizeHint() const override { return {280, 240}; }

 protected:
  void drawForeground(QPainter* painter, const QRectF& rect) override;
  void mouseMoveEvent(QMouseEvent* event) override;

 private:
  double toY(double ns) const;  // chart units: the time unit, or log10 of it
  void fitAxes();
  QPointF scene(double x, double y) const;
  void drawBox(QPainter* painter, const SliceValue& v, double x, double halfWidth) const;
  void drawLowerBound(QPainter* painter, const SliceValue& v, double x) const;

  const TrialsModel* model_;
  ParameterSlice slice_;
  ParameterAxis axis_;
  std::vector<double> xs_;  // per value of slice_
  TimeUnit unit_{QStringLiteral("µs"), 1e3};
  bool log_ = false;
  QCategoryAxis* xAxis_;
  QCategoryAxis* yAxis_;
  QScatterSeries* best_;
  QLineSeries* bestLine_;
  QScatterSeries* marked_;
};

}  // namespace ktune::gui
