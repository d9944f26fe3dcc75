#pragma once
// Analyse page: a tuner's questions about one shape of the run, answered from its trials.
//  - Which parameters matter: fANOVA importance (ktune/parameter_importance.h) with each
//    parameter's correlation with latency beside it, so a user knows which to widen and which
//    to fix.
//  - How latency moves with each parameter: a slice per parameter (SliceChart), best and spread
//    at each value, failures counted, most important parameter first.
//  - What the best configs share: parallel coordinates of the best N (ParallelCoordinates);
//    brushing an axis sets the model's TrialBrush (which the Trials page filters by and the
//    Landscape charts highlight) and rings the brushed trials on the slices.
// Each chart exports as PNG or SVG titled with the run and the shape, and its data as CSV.
#include <QWidget>
#include <vector>

#include "ktune/parameter_importance.h"
#include "ktune/parameter_slice.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QSettings;
class QSpinBox;
class QTableView;
class QTimer;

namespace ktune::gui {

class ChartFrame;
class ImportanceModel;
class ParallelCoordinates;
class SliceChart;
class TrialsModel;

class AnalysePage : public QWidget {
  Q_OBJECT
 public:
  explicit AnalysePage(TrialsModel* model, QWidget* parent = nullptr);

  // One shape at a time (a problem key); the first shape until one is chosen.
  void setShape(const QString& problemKey);
  QString shape() const;
  QComboBox* shapeCombo() const { return shape_; }
  void setBestCount(int n);   // the parallel coordinates' N
  void setLogScale(bool on);  // the slices' time axis
  // Computes every chart now rather than on the next event-loop turn (tests, benchmarks).
  void refresh();
  // Brushes the parallel coordinates' latency axis over the shape's `n` fastest configs, as a drag
  // over the axis's bottom does (ktune-workbench --brush-best); ties with the n-th stay in.
  void brushFastest(int n);

  ImportanceModel* importance() const { return importance_; }
  QTableView* importanceTable() const { return table_; }
  QString importanceCaption() const;
  ParallelCoordinates* parallelCoordinates() const { return parallel_; }
  // The slices shown, most important parameter first (parameters with one value have none).
  QList<SliceChart*> slices() const;
  QString slicesCaption() const;
  // The charts' frames by name: parameter_importance, parameter_slices, parallel_coordinates.
  QList<ChartFrame*> frames() const { return frames_; }
  ChartFrame* frame(const QString& name) const;
  // "Parameter importance · run gemm_0412 · M=64,N=512,K=512,dtype=f32": an export's title.
  QString exportTitle(const QString& chart) const;
  // Every chart as <stem>_<chart>.png, .svg and .csv into `folder`; returns the files. Throws
  // InputError naming a file that cannot be written.
  QStringList exportAll(const QString& folder, const QString& stem);

  void saveSettings(QSettings& settings) const;
  void restoreSettings(const QSettings& settings);

  static ImportanceOptions importanceOptions() { return {}; }

 signals:
  void trialClicked(qint64 id);

 protected:
  void showEvent(QShowEvent* event) override;

 private:
  void refreshShapes();
  void schedule();
  QWidget* buildImportance();
  QWidget* buildSlices();
  QWidget* buildParallel();
  // One chart per parameter that took more than one value, in the order given.
  void showSlices(const std::vector<ParameterSlice>& slices);
  void markBrushed();
  std::string runName() const;

  TrialsModel* model_;
  QComboBox* shape_;
  ImportanceModel* importance_;
  QTableView* table_;
  QLabel* importanceCaption_;
  QWidget* sliceGrid_;
  QLabel* slicesCaption_;
  QList<SliceChart*> slices_;
  int slicesShown_ = 0;
  QCheckBox* log_;
  ParallelCoordinates* parallel_;
  QSpinBox* count_;
  QList<ChartFrame*> frames_;
  bool dirty_ = true;
  QTimer* timer_;
};

}  // namespace ktune::gui
