#pragma once
// Trials page: the sortable, filterable table of every trial with a detail panel (config,
// stats, error, and a strip plot of the selected trial's samples), each shape's winner marked.
// It owns the selection that the landscape charts follow: selectTrial() from a chart click,
// currentTrialChanged() back.
#include <QSet>
#include <QWidget>

#include "ktune/trial.h"

class QChartView;
class QComboBox;
class QLabel;
class QLineEdit;
class QScatterSeries;
class QLineSeries;
class QTableView;
class QTextBrowser;
class QToolButton;

namespace ktune::gui {

class TrialsModel;
class TrialsFilterProxy;

class TrialDetailView : public QWidget {
  Q_OBJECT
 public:
  // `model` says how parameter values read (string parameters as strings).
  explicit TrialDetailView(const TrialsModel* model, QWidget* parent = nullptr);
  void showTrial(const Trial* trial);  // nullptr: nothing selected
  int sampleCount() const;

 private:
  // Says so on the winner's row, with the number it won by and its flags; empty elsewhere.
  QString winnerNote(const Trial& t) const;

  const TrialsModel* model_;
  QTextBrowser* text_;
  QChartView* samplesView_;
  QScatterSeries* samples_;
  QLineSeries* median_;
};

class TrialsPage : public QWidget {
  Q_OBJECT
 public:
  explicit TrialsPage(TrialsModel* model, QWidget* parent = nullptr);

  TrialsFilterProxy* proxy() const { return proxy_; }
  QTableView* table() const { return table_; }
  QToolButton* brushedButton() const { return brushed_; }
  TrialDetailView* detail() const { return detail_; }
  qint64 currentTrial() const;

 public slots:
  // Selects and shows the trial's row, clearing filters that hide it.
  void selectTrial(qint64 id);
  // Checks exactly these status buttons, as a click would; Pruned lists the pruned configs.
  void setStatusFilter(const QSet<TrialStatus>& statuses);

 signals:
  void currentTrialChanged(qint64 id);

 private:
  void refreshShapes();
  void fitParameterColumns();
  void applyStatusFilter();
  void showCurrent();
  void onCurrentChanged();
  // The model's TrialBrush (the Analyse page's brush): a "Brushed" button appears, checked, and
  // the table shows only its trials until it is unchecked; no brush removes it.
  void followBrush();

  TrialsModel* model_;
  TrialsFilterProxy* proxy_;
  QTableView* table_;
  TrialDetailView* detail_;
  QComboBox* shapeFilter_;
  QLabel* passLabel_;
  QComboBox* passFilter_;  // shown only for shapes with a pass (grouped_gemm)
  QLineEdit* textFilter_;
  QList<QToolButton*> statusButtons_;
  QToolButton* winnersOnly_;
  QToolButton* brushed_;
  QLabel* countLabel_;
};

}  // namespace ktune::gui
