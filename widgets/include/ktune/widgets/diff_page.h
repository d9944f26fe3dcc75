#pragma once
// Apply page: the run's results against the registry, key by key (DiffModel), each with a
// checkbox (pre-checked for new and faster). Checking a slower or not comparable (other
// benchmarking method) row asks for confirmation first; a flagged winner can be checked only once
// "Accept flagged winners" is; a run that is not finished is shown, not applied. "Apply selected"
// writes exactly the checked keys through the core (atomic, backup kept) and shows what was
// written and what was skipped, and why. "Re-measure" times the registry's config and the run's
// side by side on the run's device now (RemeasureJob) and classes those keys from the paired ratio.
// A verdict whose two numbers were taken at SM clocks apart says so beside its class; its note is
// given in full above the selected row's configs, and such rows are counted in the status line.
// "Compare with run…" puts another run folder beside this run instead (RunComparePanel): a
// comparison, with nothing to apply, until "Back to the registry".
#include <QWidget>
#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include "ktune/backend.h"
#include "ktune/diff.h"
#include "ktune/widgets/diff_model.h"

class QCheckBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QStackedWidget;
class QTableView;
class QTextBrowser;

namespace ktune::gui {

class ConfigDiffPanel;
class RemeasureJob;
class RunComparePanel;
class RunDocument;

class DiffPage : public QWidget {
  Q_OBJECT
 public:
  explicit DiffPage(RunDocument* document, QWidget* parent = nullptr);

  DiffModel* model() { return &model_; }
  void setRegistryRoot(const QString& root);
  QString registryRoot() const;
  // Diffs the document's results against the registry; false (with the reason shown) when
  // there is nothing to compare.
  bool compare();
  // Applies the checked rows; returns the core's report, or nullopt when nothing was applied
  // (the reason is shown on the page).
  std::optional<ApplyReport> applySelected();
  QString statusText() const;
  QCheckBox* acceptFlaggedBox() const { return acceptFlagged_; }
  // The current row's configs parameter by parameter (beside the table).
  const ConfigDiffModel* configDiff() const;
  QString configTitle() const;  // above them: the row, what changed, and its clock note
  QTableView* table() const { return table_; }
  QString reportText() const;  // the last apply's report, as plain text

  // The backends Re-measure opens the run's device with (they must outlive the page); without
  // them the button stays disabled.
  void setBackends(const std::vector<std::unique_ptr<Backend>>* backends);
  // Why the device cannot be used now (a tune is running on it), or empty when it can.
  void setDeviceBusy(const QString& reason);
  bool isRemeasuring() const;
  // Starts re-measuring in the background; false (with the reason shown) when it cannot.
  bool remeasure();

  // Shows this run beside the run folder `dir`, shape by shape, in place of the registry diff;
  // the panel's compared() or failed() follow once `dir` is read.
  void compareWithRun(const QString& dir);
  void closeComparison();  // back to the registry diff
  bool isComparingRuns() const;
  RunComparePanel* comparePanel() const { return comparePanel_; }

 signals:
  void applied(const ktune::ApplyReport& report);
  void remeasured();  // finished or stopped: the table shows the paired classes

 private:
  void showMessage(const QString& text, bool error);
  bool canApply() const;  // a finished run with checked rows
  void updateButtons();
  void remeasureEnded(const QString& error);
  void refreshAcceptFlagged();
  void showConfigDiff(int row);
  QString flaggedNote() const;  // for the status line; empty without flagged winners
  QString clocksNote() const;   // for the status line; empty when no row's clocks are apart
  QString confirmForceText(const DiffEntry& e) const;
  QString reportHtml(const ApplyReport& report) const;

  RunDocument* document_;
  DiffModel model_;
  ConfigDiffPanel* configPanel_;
  QLineEdit* root_;
  QLabel* status_;
  QTableView* table_;
  QCheckBox* acceptFlagged_;
  QPushButton* apply_;
  QPushButton* remeasure_;
  QTextBrowser* report_;
  QStackedWidget* views_;
  QWidget* registryView_;
  RunComparePanel* comparePanel_;
  RemeasureJob* job_;
  const std::vector<std::unique_ptr<Backend>>* backends_ = nullptr;
  QString busy_;
  std::vector<PairedVerdict> paired_;  // the last re-measure's verdicts on this run
  std::filesystem::path jobDir_;       // the run the re-measure was started on
};

}  // namespace ktune::gui
