#pragma once
// TrialChartView: the Qt Charts base of the landscape's scatter charts. Subclasses say which
// trials become points (x, y, group); the base draws them, with
//  - per-pixel decimation: only one marker per few-pixel cell and group is handed to the
//    QScatterSeries (in one replace() call), so 100k trials redraw like a few thousand; the
//    cells are recomputed from the full data on every zoom or pan, so nothing visible is lost;
//  - hover tooltips with the trial's config and stats, click-to-select, and a highlight ring
//    for the trial selected elsewhere (the trials table);
//  - wheel zoom, rubber-band zoom, middle-button or Shift-drag pan, double-click to reset;
//  - log-scale y and PNG/SVG export.
#include <QChartView>
#include <QElapsedTimer>
#include <QHash>
#include <QSet>
#include <QList>
#include <QPointF>
#include <QTimer>
#include <array>
#include <QRubberBand>
#include <vector>

#include "ktune/trial.h"

class QAbstractAxis;
class QScatterSeries;
class QValueAxis;
class QXYSeries;

namespace ktune::gui {

class TrialsModel;

// Saves `widget` as PNG (or any raster format Qt knows by the suffix) or SVG. Throws
// InputError naming the file when it cannot be written.
void exportWidget(QWidget* widget, const QString& file);

class TrialChartView : public QChartView {
  Q_OBJECT
 public:
  explicit TrialChartView(TrialsModel* model, QWidget* parent = nullptr);

  void setShapeFilter(const QString& problemKey);  // empty: every shape
  QString shapeFilter() const { return shape_; }
  void setLogScale(bool on);
  bool logScale() const { return log_; }
  void setHighlightedTrial(qint64 id);  // -1: none
  qint64 highlightedTrial() const { return highlighted_; }
  void resetZoom();
  // Shows `plotRect` (chart item coordinates, within the plot area) as the whole plot.
  void zoomTo(const QRectF& plotRect);
  void exportTo(const QString& file) { exportWidget(this, file); }

  // Rebuilds now instead of on the next event-loop turn (benchmarks, screenshots).
  void refresh();
  int dataPoints() const { return static_cast<int>(points_.size()); }
  int drawnPoints() const;
  // The drawn trial nearest to `position` (chart item coordinates, i.e. pixels) within a few
  // pixels, or -1.
  qint64 trialAt(const QPointF& position) const;
  // Where trial `id` is drawn, in view (viewport) coordinates; false when it is not drawn.
  bool viewPositionOf(qint64 id, QPoint* position) const;

  static constexpr int kCellPixels = 3;
  static constexpr int kMinRebuildMs = 250;
  static constexpr double kHeadroom = 0.15;  // of the x span, right of the last point

 signals:
  void trialClicked(qint64 id);

 protected:
  struct Group {
    QString name;
    QColor color;
  };
  struct Point {
    double x, y;
    int group;
    int row;  // in the model
  };

  virtual QString xTitle() const = 0;
  virtual QString yTitle() const = 0;
  virtual std::vector<Group> groups() const = 0;
  virtual bool pointFor(const Trial& trial, double* x, double* y, int* group) const = 0;
  // Lines drawn over the points (best so far, peak); `points` are in model order.
  virtual void rebuildExtras(const std::vector<Point>& /*points*/) {}

  TrialsModel* model() const { return model_; }
  const std::vector<Point>& points() const { return points_; }
  QValueAxis* xAxis() const { return xAxis_; }
  // Extra series share the axes and are kept across log/linear switches.
  void addExtraSeries(QXYSeries* series, bool inLegend = true);
  // `full` false: only rows were appended since the last rebuild.
  void markDirty(bool full = true);
  // Widens the y axis to show `value` (a peak line) unless the user has zoomed.
  void ensureYIncludes(double value);

  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void showEvent(QShowEvent* event) override;

 private:
  void rebuild();
  void syncGroups();
  void fitAxes(bool growing = false);
  void decimate();
  // Draws points_[first...] into the free cells; `replace` starts the cells over.
  void placeMarkers(std::size_t first, bool replace);
  void collect(std::size_t fromRow, std::vector<Point>* out) const;
  void updateHighlight();
  void attach(QXYSeries* series);
  // Extras show in the legend when they have points and were not added as unlisted.
  void applyLegend();
  void onRangeChanged();
  // The view (fitted or zoomed) the markers were decimated for; Qt Charts may refit axes when
  // series change, and restoreRanges() puts this view back.
  void saveRanges();
  void restoreRanges();
  double yMin() const;
  double yMax() const;
  QPointF toPixels(double x, double y, const QRectF& plot) const;
  QPointF chartPosition(const QPoint& viewPosition) const;

  TrialsModel* model_;
  QValueAxis* xAxis_;
  QAbstractAxis* yAxis_ = nullptr;
  QList<QScatterSeries*> groupSeries_;
  QList<QXYSeries*> extraSeries_;
  QSet<QXYSeries*> notInLegend_;
  QScatterSeries* highlight_;
  std::vector<Point> points_;
  struct Marker {
    QPointF pixels;  // chart item coordinates
    int row;
  };
  std::vector<Marker> drawn_;  // every marker handed to a series, for hover and click
  QHash<qint64, int> pointById_;
  QString shape_;
  bool log_ = false;
  bool zoomed_ = false;
  std::array<double, 4> ranges_{0, 1, 0, 1};  // x min, x max, y min, y max
  bool settingRange_ = false;
  bool dirty_ = true;
  bool fullRebuild_ = true;
  std::size_t builtRows_ = 0;   // model rows the points were collected from
  std::vector<bool> taken_;     // decimation cells in use, per group
  QRectF cellPlot_;             // the plot area the cells were laid over
  qint64 highlighted_ = -1;
  QTimer rebuildTimer_;
  QElapsedTimer sinceRebuild_;
  QTimer decimateTimer_;
  QPoint pressAt_;
  QPoint panFrom_;
  bool panning_ = false;
  QRubberBand* band_ = nullptr;
};

// Latency of every trial in run order, coloured by status, with the best-so-far line per shape.
class LatencyOrderChart : public TrialChartView {
  Q_OBJECT
 public:
  explicit LatencyOrderChart(TrialsModel* model, QWidget* parent = nullptr);

 protected:
  QString xTitle() const override;
  QString yTitle() const override;
  std::vector<Group> groups() const override;
  bool pointFor(const Trial& trial, double* x, double* y, int* group) const override;
  void rebuildExtras(const std::vector<Point>& points) override;

 private:
  QList<QXYSeries*> bestLines_;
};

// Latency against one chosen parameter, one series per shape.
class ParameterChart : public TrialChartView {
  Q_OBJECT
 public:
  explicit ParameterChart(TrialsModel* model, QWidget* parent = nullptr);
  void setParameter(const QString& name);
  QString parameter() const { return parameter_; }

 protected:
  QString xTitle() const override;
  QString yTitle() const override;
  std::vector<Group> groups() const override;
  bool pointFor(const Trial& trial, double* x, double* y, int* group) const override;

 private:
  QString parameter_;
  std::string parameterStd_;
};

// Achieved TFLOP/s (or GB/s) per trial against the device's peak and each shape's roofline bound.
class ThroughputChart : public TrialChartView {
  Q_OBJECT
 public:
  enum class Metric { Tflops, Gbps };
  explicit ThroughputChart(TrialsModel* model, QWidget* parent = nullptr);
  void setPeaks(double peakGflopsF32, double peakGflopsF16, double bandwidthGbs);
  void setMetric(Metric metric);
  Metric metric() const { return metric_; }

 protected:
  QString xTitle() const override;
  QString yTitle() const override;
  std::vector<Group> groups() const override;
  bool pointFor(const Trial& trial, double* x, double* y, int* group) const override;
  void rebuildExtras(const std::vector<Point>& points) override;

 private:
  double peakFor(const Trial& trial) const;  // TFLOP/s or GB/s ceiling of the compute alone
  double boundFor(const Trial& trial) const;  // the roofline: min(peak, intensity x bandwidth)
  Metric metric_ = Metric::Tflops;
  double peakF32_ = 0, peakF16_ = 0, bandwidth_ = 0;
  QXYSeries* peakLine_;
  QXYSeries* roofLine_;
};

}  // namespace ktune::gui
