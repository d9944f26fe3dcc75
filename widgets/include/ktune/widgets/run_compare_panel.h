#pragma once
// RunComparePanel: the Apply page's "Compare with run…": the opened run beside another run folder
// (tuning_runs/<name>), shape by shape (RunCompareModel): the same shapes on two devices, on two
// dates, or before and after a kernel change. Each run's winner, its number and noise, the
// speed-up, the configs a parameter a row (ConfigDiffModel), and the shapes only one run has. A
// run of another family or other key fields, or a folder that is not a readable run, is said in
// place of the table. It is a comparison: nothing here writes to the registry.
#include <QFutureWatcher>
#include <QWidget>
#include <optional>

#include "ktune/run_store.h"
#include "ktune/widgets/config_diff_model.h"
#include "ktune/widgets/run_compare_model.h"

class QLabel;
class QTableView;

namespace ktune::gui {

class ConfigDiffPanel;
class RunDocument;

class RunComparePanel : public QWidget {
  Q_OBJECT
 public:
  explicit RunComparePanel(RunDocument* document, QWidget* parent = nullptr);
  ~RunComparePanel() override;

  // Reads `dir`'s results off the UI thread, then compares; compared() or failed() follow. The
  // comparison follows the opened run while the panel lives.
  void compareWith(const QString& dir);
  QString otherDir() const { return dir_; }
  const RunCompareModel* model() const { return &model_; }
  const ConfigDiffModel* configDiff() const;
  QTableView* table() const { return table_; }
  QString titleText() const;    // which two runs, with their devices, methods and dates
  QString configTitle() const;  // above the selected shape's configs: what differs, and its clock note
  QString statusText() const;   // what the comparison found, or why there is none

 signals:
  void compared();
  void failed(const QString& message);
  void closeRequested();

 private:
  struct Loaded {
    std::optional<RunResults> run;
    QString error;
  };
  void recompare();
  void showConfigDiff(int row);
  void showMessage(const QString& text, bool error);
  QString summary() const;

  RunDocument* document_;
  RunCompareModel model_;
  QLabel* title_;
  QLabel* status_;
  QTableView* table_;
  ConfigDiffPanel* configPanel_;
  QFutureWatcher<Loaded> loader_;
  QString dir_;
  std::optional<RunResults> other_;
};

}  // namespace ktune::gui
