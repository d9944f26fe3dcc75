#pragma once
// TrialChartView: the Qt Charts base of the landscape's scatter charts. Subclasses say which
// trials become points (x, y, group); the base draws them, with
//  - per-pixel decimation: only one marker per few-pixel cell and group is drawn, so 100k trials
//    redraw like a few thousand; the cells are recomputed from the full data on every zoom or
//    pan, so nothing visible is lost. The markers are painted by one item of the chart's scene
//    (trial_chart_markers.cpp), not by the groups' QScatterSeries, which only key the legend: a
//    scatter series makes a QGraphicsItem per point, and a view that draws thousands more
//    markers than the last (the first "× best" redraw of a 100k-trial run) spent 250 ms making
//    them;
//  - the Analyse page's brush (TrialsModel::brush()): its trials drawn as they are, the rest
//    dimmed (grey, faint), each kind decimated on its own so a brushed trial is never hidden by
//    a dimmed one;
//  - hover tooltips with the trial's config and stats, click-to-select, and a highlight ring
//    for the trial selected elsewhere (the trials table);
//  - wheel zoom, rubber-band zoom, middle-button or Shift-drag pan, double-click to reset;
//  - log-scale y; PNG/SVG export titled with the run and the shape, and the points' data as CSV
//    (chart_export.cpp);
//  - every trial that ran: failed ones (no time) in a band above the times, coloured by status,
//    slow_abort ones with an arrow up (their time is a lower bound); colour means status on every
//    scatter chart;
//  - readable axes: round-number ticks, one time unit chosen from the data (chart_axes.h);
//  - each problem's winner as the core decided it, a star at the number it was chosen by (joined
//    to its search point when that differs), each drawn trial's noise as a bar (median ± std
//    within min–max, switched off with setShowNoise), and under "× best" a line at 1
//    (trial_chart_marks.cpp).
#include <QChartView>
#include <QElapsedTimer>
#include <QHash>
#include <QList>
#include <QPixmap>
#include <QPointF>
#include <QRubberBand>
#include <QScatterSeries>
#include <QSet>
#include <QTimer>
#include <array>
#include <limits>
#include <vector>

#include "ktune/trial.h"
#include "ktune/widgets/chart_axes.h"
#include "ktune/widgets/chart_metric.h"
#include "ktune/widgets/winner.h"

class QAbstractAxis;
class QCategoryAxis;
class QXYSeries;

namespace ktune::gui {

class TrialsModel;

// Saves `widget` as PNG (or any raster format Qt knows by the suffix) or SVG, the SVG titled
// `title` (the widget's window title without one), with `caption` (lines) above the widget in
// the picture. Throws InputError naming the file when it cannot be written.
void exportWidget(QWidget* widget, const QString& file, const QString& title = {}, const QString& caption = {});
// Writes an export's text to `file` atomically; throws InputError naming the file.
void writeExport(const QString& file, const std::string& text);

class TrialChartView : public QChartView {
  Q_OBJECT
 public:
  explicit TrialChartView(TrialsModel* model, QWidget* parent = nullptr);

  void setShapeFilter(const QString& problemKey);  // empty: every shape
  QString shapeFilter() const { return shape_; }
  void setLogScale(bool on);
  bool logScale() const { return log_; }
  // The y axis of charts that plot one value per trial (latency or a recorded metric).
  void setYMetric(const ChartMetric& metric);
  const ChartMetric& yMetric() const { return yMetric_; }
  void setHighlightedTrial(qint64 id);  // -1: none
  qint64 highlightedTrial() const { return highlighted_; }
  void resetZoom();
  // Shows `plotRect` (chart item coordinates, within the plot area) as the whole plot.
  void zoomTo(const QRectF& plotRect);
  // Each ok trial's noise as a bar (median ± std within min–max) on latency and × best charts.
  void setShowNoise(bool on);
  bool showsNoise() const { return showNoise_; }

  // PNG or SVG by the suffix, titled exportTitle(); a .csv name writes csv(). Throws InputError
  // naming the file.
  void exportTo(const QString& file);
  // The chart's title with the run's name and the shape shown: what a picture needs to stand
  // alone (its SVG title; the picture has the run and the shape above the chart's title).
  QString exportTitle() const;
  QString exportContext() const;  // "run NAME · M=16,N=512,K=512,dtype=f32" (or "all 3 shapes")
  // Every point, drawn or decimated away, in model order: trial, shape, status, x, y (empty for a
  // failed trial: it has no time) and the noise bar's ends where it has one, in the axes' units.
  std::string csv() const;
  // What hovering the trial shows: its numbers, and what its bar and its "× best" are.
  QString hoverText(const Trial& trial) const;

  // Rebuilds now instead of on the next event-loop turn (benchmarks, screenshots).
  void refresh();
  int dataPoints() const { return static_cast<int>(points_.size()); }
  // Every point's (x, y), drawn or decimated away, in model order.
  QList<QPointF> dataValues() const;
  int drawnPoints() const;
  // Under the Analyse page's brush: the points of brushed trials (highlighted) and of the others
  // (dimmed), drawn or decimated away, and the markers drawn of each. Without a brush every point
  // is highlighted.
  struct BrushCounts {
    int highlighted = 0, dimmed = 0, drawnHighlighted = 0, drawnDimmed = 0;
  };
  BrushCounts brushCounts() const;
  // The markers drawn of each group that has any: its key name, colour, marker and count.
  struct DrawnGroup {
    QString name;
    QColor color;
    QScatterSeries::MarkerShape marker;
    int markers;
  };
  std::vector<DrawnGroup> drawnGroups() const;
  // How a marker of colour `c` is drawn when a brush leaves its trial out.
  static QColor dimmedColour(const QColor& c);
  // The drawn trial nearest to `position` (chart item coordinates, i.e. pixels) within a few
  // pixels, or -1.
  qint64 trialAt(const QPointF& position) const;
  // Where trial `id` is drawn, in view (viewport) coordinates; false when it is not drawn.
  bool viewPositionOf(qint64 id, QPoint* position) const;
  // The winners' stars (x, y) of the shapes shown.
  QList<QPointF> winnerPoints() const;
  // The whiskers drawn, as (x, low y, high y) in chart units, one per drawn trial whose spread
  // is known.
  struct Spread {
    double x, low, high;
    qint64 trial;
  };
  std::vector<Spread> drawnSpreads() const;

  // The winners' gold, shared with the heatmap's crown.
  static QColor winnerColour() { return QColor(0xf9, 0xa8, 0x25); }

  static constexpr int kCellPixels = 3;
  static constexpr int kMarkerPixels = 7;
  // The log axis's base: powers of 2 read as "2× slower" under × best, decades elsewhere.
  int logBase() const { return yMetric_.isVsBest() ? 2 : 10; }
  static constexpr int kMinRebuildMs = 250;
  static constexpr double kHeadroom = 0.15;  // of the x span, right of the last point
  // pointFor's y for a trial that failed (no time to plot): it goes into the failures band.
  static constexpr double kFailedBand = std::numeric_limits<double>::infinity();
  // Failed trials (not ok, not slow_abort, not pruned) have no time that means anything.
  static bool failed(TrialStatus status) {
    return status != TrialStatus::Ok && status != TrialStatus::SlowAbort && status != TrialStatus::Pruned;
  }
  QString statusLegend(TrialStatus status) const;  // "slow_abort ↑ (lower bound)"
  // Whether failed trials are drawn in the band, and whether `y` (chart units) lies in it.
  bool hasFailureBand() const { return hasBand_; }
  bool inFailureBand(double y) const { return hasBand_ && y > bandLow_; }
  QStringList xTickLabels() const;  // the x axis's labels, left to right
  QStringList yTickLabels() const;  // the linear y axis's labels, bottom to top

 signals:
  void trialClicked(qint64 id);

 protected:
  enum class Legend { IfDrawn, Always, Never };
  struct Group {
    QString name;
    QColor color;
    QScatterSeries::MarkerShape marker = QScatterSeries::MarkerShapeCircle;
    Legend legend = Legend::IfDrawn;  // Always: a key entry with no points of its own
  };
  struct Point {
    double x, y;
    int group;
    int row;    // in the model
    bool band;  // a failed trial, drawn in the failures band
  };

  virtual QString xTitle() const = 0;
  virtual QString yTitle() const = 0;
  virtual QString title() const = 0;  // follows the y metric
  virtual std::vector<Group> groups() const = 0;
  // `measured`: the trial's place among the measured trials (those with latency samples) of the
  // shapes shown, from 0; -1 for one never measured (pruned, or failed to build or run). Run
  // order charts plot against it, so thousands of pruned configs leave no gaps.
  // y = kFailedBand puts the trial in the failures band.
  virtual bool pointFor(const Trial& trial, std::int64_t measured, double* x, double* y, int* group) const = 0;
  // Before a full rebuild's groups() and pointFor(): a subclass learns what it needs from all
  // trials of `shape` (empty: every shape), e.g. a parameter's values.
  virtual void prepare(const std::string& /*shape*/) {}
  // True when trials appended since prepare() need it again (a value the axis lacks).
  virtual bool needsPrepare() const { return false; }
  // The x axis's labels within [lo, hi]; by default round integers (trial numbers).
  virtual std::vector<AxisTick> xTicks(double lo, double hi) const { return niceTicks(lo, hi, 7, true); }
  // A point's x as its CSV column says it: the number, or the parameter's value.
  virtual QString xText(const Trial& /*trial*/, double x) const { return QString::number(x, 'g', 10); }
  // The x range that shows points from x0 to x1.
  virtual void xRange(double x0, double x1, double* lo, double* hi) const;
  // The number of measured trials collected so far: where a failed trial sits in run order.
  std::int64_t measuredSoFar() const { return measured_; }
  // Lines drawn over the points (best so far, peak); `points` are in model order.
  virtual void rebuildExtras(const std::vector<Point>& /*points*/) {}
  // Whether y is the trials' median (latency or × best), whose noise the bars show.
  virtual bool drawsSpread() const { return yMetric_.isTime(); }
  // Where the winner's star goes, given its search trial's y: the number it was chosen by.
  virtual double winnerValue(const Winner& winner, double searchY) const;

  TrialsModel* model() const { return model_; }
  const std::vector<Point>& points() const { return points_; }
  QCategoryAxis* xAxis() const { return xAxis_; }
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
  void drawForeground(QPainter* painter, const QRectF& rect) override;

 private:
  void rebuild();
  void syncGroups();
  void fitAxes(bool growing = false);
  void decimate();
  // Draws points_[first...] into the free cells; `replace` starts the cells over.
  void placeMarkers(std::size_t first, bool replace);
  // Points of rows fromRow.. (numbering measured trials on from measured_).
  void collect(std::size_t fromRow, std::vector<Point>* out);
  void updateHighlight();
  void updateWinners();
  // Paints the drawn markers, dimmed ones first, in chart item coordinates (the marker layer's).
  void paintMarkers(QPainter* painter) const;
  void createMarkerLayer();
  void markerLayerChanged(const QRectF& plot);  // drawn_ changed, laid over `plot`
  // The trial's noise in chart units: median ± std, within its min and max; false without one
  // or with the bars off.
  bool spreadOf(const Trial& trial, double* low, double* high) const;
  bool rawSpreadOf(const Trial& trial, double* low, double* high) const;  // shown or not
  QString noiseText(const Trial& trial) const;                            // the hover's lines on the bar and × best
  void drawBestLine(QPainter* painter, const QRectF& plot);               // × best: the line at 1
  void applyLogBase();
  QString decoratedTitle() const;  // title(), and what the bars are while they are shown
  // × best: each shape's best, learnt again from every trial (true) or from the rows appended
  // since the last build, true when those moved a best (every point of its shape moves).
  bool learnBests(bool all);
  // The winners' stars and the selection ring stay above every other series.
  void raiseOverlays();
  void attach(QXYSeries* series);
  // Extras show in the legend when they have points and were not added as unlisted.
  void applyLegend();
  void onRangeChanged();
  void updateTicks();
  // The failures band over the times: where it starts and its points' y, after the axes are fit.
  void placeBand(double dataTop);
  void drawBand(QPainter* painter, const QRectF& plot);
  void drawLowerBounds(QPainter* painter, const QRectF& plot);
  // The time unit of latency charts, from the median of the shown trials' medians.
  void chooseTimeUnit(const std::string& shape);
  // The view (fitted or zoomed) the markers were decimated for; Qt Charts may refit axes when
  // series change, and restoreRanges() puts this view back.
  void saveRanges();
  void restoreRanges();
  double yMin() const;
  double yMax() const;
  QPointF toPixels(double x, double y, const QRectF& plot) const;
  QPointF chartPosition(const QPoint& viewPosition) const;

  TrialsModel* model_;
  QCategoryAxis* xAxis_;
  QAbstractAxis* yAxis_ = nullptr;
  QList<QScatterSeries*> groupSeries_;
  std::vector<Group> groups_;
  QList<QXYSeries*> extraSeries_;
  QSet<QXYSeries*> notInLegend_;
  QScatterSeries* highlight_;
  QScatterSeries* winners_;
  // From each winner's search point to its star, in chart units.
  struct Link {
    double x, from, to;
  };
  std::vector<Link> links_;
  std::vector<Point> points_;
  bool hasBand_ = false;
  double bandLow_ = 0;                                            // chart units
  std::array<double, std::size(kAllTrialStatuses)> bandLines_{};  // each failing status's y in the band
  struct Marker {
    QPointF pixels;  // chart item coordinates, when placed (hover and click)
    int row;
    double x, y;  // chart units: painted where the axes put them now
    int group;
    bool dimmed;  // a brush is set and leaves this trial out
  };
  std::vector<Marker> drawn_;  // every marker drawn, for painting, hover and click
  std::vector<int> drawnPerGroup_;
  class MarkerLayer;  // the scene item that paints drawn_ (trial_chart_markers.cpp)
  MarkerLayer* markerLayer_ = nullptr;
  mutable QHash<QString, QPixmap> sprites_;  // a marker's picture by group, dimming and pixel ratio
  QHash<qint64, int> pointById_;
  QString shape_;
  ChartMetric yMetric_;
  bool log_ = false;
  bool showNoise_ = true;
  bool zoomed_ = false;
  std::array<double, 4> ranges_{0, 1, 0, 1};  // x min, x max, y min, y max
  bool settingRange_ = false;
  bool dirty_ = true;
  bool fullRebuild_ = true;
  std::size_t builtRows_ = 0;  // model rows the points were collected from
  std::int64_t measured_ = 0;  // measured trials of the shown shapes in those rows
  std::vector<bool> taken_;    // decimation cells in use, per group
  QRectF cellPlot_;            // the plot area the cells were laid over
  qint64 highlighted_ = -1;
  QTimer rebuildTimer_;
  QElapsedTimer sinceRebuild_;
  QTimer decimateTimer_;
  QPoint pressAt_;
  QPoint panFrom_;
  bool panning_ = false;
  QRubberBand* band_ = nullptr;
};

}  // namespace ktune::gui
