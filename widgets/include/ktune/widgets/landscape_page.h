#pragma once
// Landscape page: the four live charts (latency in order with best so far, latency against a
// parameter, heatmap over two parameters, throughput against peak), their choices, and export
// (each chart as PNG or SVG titled with the run and the shape, or its data as CSV). The two
// scatter charts plot latency, its distance from the shape's best ("× best", on a log axis) or any
// metric the run recorded (the "y" combo box), with each trial's noise as a bar ("Noise bars").
// While the Analyse page's brush is set (TrialsModel::brush()) every chart draws the brushed
// trials as they are and dims the rest, under a note that says so and clears it.
#include <QWidget>

#include "ktune/device.h"
#include "ktune/search_space.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QSettings;

namespace ktune::gui {

class TrialsModel;
class LatencyOrderChart;
class ParameterChart;
class ThroughputChart;
class HeatmapView;

class LandscapePage : public QWidget {
  Q_OBJECT
 public:
  explicit LandscapePage(TrialsModel* model, QWidget* parent = nullptr);

  void setDevice(const DeviceInfo& device);
  // The run's space: its candidate lists choose the default axes before trials arrive.
  void setSpace(const SearchSpace& space);
  LatencyOrderChart* orderChart() const { return order_; }
  ParameterChart* parameterChart() const { return parameter_; }
  HeatmapView* heatmap() const { return heatmap_; }
  // The scatter charts' y: "" for latency, ChartMetric::vsBestName() for × best, else a name of
  // TrialsModel::metricNames().
  void setYMetric(const QString& name);
  QString yMetric() const;
  QComboBox* yMetricCombo() const { return yMetric_; }
  ThroughputChart* throughputChart() const { return throughput_; }
  // The note above the charts while a brush is set ("" without one), and its Clear brush button
  // (object name clearBrush).
  QString brushNoteText() const;
  QWidget* brushNote() const { return brushNote_; }

  void saveSettings(QSettings& settings) const;
  void restoreSettings(const QSettings& settings);
  // Exports every chart as <stem>_<chart>.png and .svg into `folder`; returns the files.
  // Throws InputError naming a file that cannot be written.
  QStringList exportAll(const QString& folder, const QString& stem);

 public slots:
  void setHighlightedTrial(qint64 id);

 signals:
  void trialClicked(qint64 id);

 private:
  void refreshChoices();
  void refreshMetrics();
  void applyYMetric();
  // PNG, SVG or CSV by the suffix, titled with the run and the shape.
  void exportChart(QWidget* chart, const QString& file);
  QStringList rankedParameters() const;
  void applyShape();
  QWidget* framed(QWidget* chart, const QString& name, QWidget* options);
  QWidget* buildBrushNote();
  void followBrush();

  TrialsModel* model_;
  LatencyOrderChart* order_;
  ParameterChart* parameter_;
  HeatmapView* heatmap_;
  ThroughputChart* throughput_;
  QComboBox* shape_;
  QCheckBox* log_;
  QCheckBox* noise_;
  bool logForVsBest_ = false;  // × best switched the log axis on
  bool userLog_ = false;       // the log axis as the user left it, for the other metrics
  QComboBox* xParam_;
  QComboBox* heatShape_;  // the heatmap's one shape; follows the page's shape when one is chosen
  QComboBox* heatX_;
  QComboBox* heatY_;
  QComboBox* metric_;
  QComboBox* yMetric_;
  QWidget* brushNote_;
  QLabel* brushText_;
  QString preferredY_;                                      // saved y metric, chosen again when a run has it
  QStringList preferred_{QString(), QString(), QString()};  // saved x, heat x, heat y
  bool choicesInformed_ = false;
  SearchSpace space_;  // the current choices were made with trials in the model
};

}  // namespace ktune::gui
