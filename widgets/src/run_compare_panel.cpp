#include "ktune/widgets/run_compare_panel.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTableView>
#include <QVBoxLayout>
#include <QtConcurrent>
#include <algorithm>
#include <filesystem>

#include "ktune/error.h"
#include "ktune/widgets/config_diff_panel.h"
#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/run_document.h"

namespace ktune::gui {

namespace {

// "before: Test CPU, amortized, finished 2026-11-23T05:00:00Z"
QString describeRun(const RunResults& r) {
  return QCoreApplication::translate("RunComparePanel", "<b>%1</b>: %2, %3, %4 %5")
      .arg(qstr(r.run_name).toHtmlEscaped(), qstr(r.device).toHtmlEscaped(), qstr(r.method).toHtmlEscaped(),
           qstr(r.state).toHtmlEscaped(), qstr(r.finished_at).toHtmlEscaped());
}

}  // namespace

RunComparePanel::RunComparePanel(RunDocument* document, QWidget* parent) : QWidget(parent), document_(document) {
  model_.setConfigText(document_->trials());
  title_ = new QLabel;
  title_->setWordWrap(true);
  title_->setTextFormat(Qt::RichText);
  auto* close = new QPushButton(tr("Back to the registry"));
  close->setToolTip(tr("Leave the comparison: the page compares this run with the registry again"));
  status_ = new QLabel;
  status_->setWordWrap(true);
  table_ = new QTableView;
  table_->setObjectName(QStringLiteral("runComparison"));
  table_->setModel(&model_);
  table_->verticalHeader()->hide();
  table_->setWordWrap(false);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setColumnWidth(RunCompareModel::VerdictColumn, 170);
  table_->setColumnWidth(RunCompareModel::ConfigColumn, 250);
  for (int c : {RunCompareModel::RunColumn, RunCompareModel::OtherColumn}) table_->setColumnWidth(c, 95);
  for (int c : {RunCompareModel::RunNoiseColumn, RunCompareModel::OtherNoiseColumn, RunCompareModel::RatioColumn})
    table_->setColumnWidth(c, 75);
  configPanel_ = new ConfigDiffPanel(QStringLiteral("compareConfigDiff"));
  configPanel_->model()->setSideTitles(tr("Other run"), tr("This run"));

  auto* top = new QHBoxLayout;
  top->addWidget(title_, 1);
  top->addWidget(close, 0, Qt::AlignTop);
  auto* middle = new QHBoxLayout;
  middle->addWidget(table_, 1);
  middle->addWidget(configPanel_);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(top);
  layout->addWidget(status_);
  layout->addLayout(middle, 1);

  connect(close, &QPushButton::clicked, this, &RunComparePanel::closeRequested);
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& current) { showConfigDiff(current.row()); });
  // A new comparison opens on its first shape that both runs have: its two configs side by side.
  connect(&model_, &QAbstractItemModel::modelReset, this, [this] {
    table_->resizeColumnToContents(RunCompareModel::KeyColumn);
    // "same within noise (±2.0 %) (clocks differ)" whole; 170 px where every verdict is short.
    table_->resizeColumnToContents(RunCompareModel::VerdictColumn);
    table_->setColumnWidth(RunCompareModel::VerdictColumn,
                           std::max(170, table_->columnWidth(RunCompareModel::VerdictColumn)));
    const auto& shapes = model_.comparison().shapes;
    const auto both = std::find_if(shapes.begin(), shapes.end(), [](const ComparedShape& s) { return s.both(); });
    const int row = shapes.empty() ? -1 : both == shapes.end() ? 0 : static_cast<int>(both - shapes.begin());
    if (row >= 0) table_->setCurrentIndex(model_.index(row, RunCompareModel::KeyColumn));
    showConfigDiff(row);
  });
  connect(document_, &RunDocument::resultsChanged, this, &RunComparePanel::recompare);
  connect(&loader_, &QFutureWatcher<Loaded>::finished, this, [this] {
    Loaded loaded = loader_.result();
    if (!loaded.run) {
      other_.reset();
      model_.setComparison({}, {});
      title_->clear();
      showMessage(loaded.error, true);
      emit failed(loaded.error);
      return;
    }
    other_ = std::move(loaded.run);
    recompare();
  });
  showConfigDiff(-1);
}

RunComparePanel::~RunComparePanel() { loader_.waitForFinished(); }

void RunComparePanel::compareWith(const QString& dir) {
  loader_.waitForFinished();
  dir_ = dir;
  showMessage(tr("Reading %1…").arg(dir), false);
  loader_.setFuture(QtConcurrent::run([dir]() -> Loaded {
    const std::filesystem::path path(sstr(dir));
    try {
      if (!std::filesystem::is_directory(path))
        throw InputError(path.string() + " is not a folder: choose a run folder (tuning_runs/<name>)");
      if (!std::filesystem::exists(path / "results.json"))
        throw InputError(path.string() +
                         " has no results.json: it is not a run folder, or its run did not finish (resume it first)");
      return Loaded{RunStore::read_results(path), {}};
    } catch (const std::exception& e) {
      return Loaded{std::nullopt, tr("Cannot compare with %1: %2").arg(dir, QString::fromUtf8(e.what()))};
    }
  }));
}

void RunComparePanel::recompare() {
  if (!other_) return;
  const auto refuse = [this](const QString& why) {
    model_.setComparison({}, {});
    showMessage(why, true);
    emit failed(why);
  };
  title_->setText(
      tr("Comparing this run with another, shape by shape:<br>this run %1<br>other run %2")
          .arg(document_->results() ? describeRun(*document_->results()) : tr("(none)"), describeRun(*other_)));
  if (!document_->results())
    return refuse(document_->hasRun()
                      ? tr("This run has no results.json yet (it did not finish): resume it, then "
                           "compare it with %1.")
                            .arg(qstr(other_->run_name))
                      : tr("Open a finished run (File → Open Run…) to compare %1 with.").arg(qstr(other_->run_name)));
  try {
    model_.setComparison(compare_runs(*document_->results(), *other_), qstr(other_->run_name));
  } catch (const InputError& e) {
    return refuse(tr("Cannot compare: %1").arg(QString::fromUtf8(e.what())));
  }
  showMessage(summary(), false);
  emit compared();
}

QString RunComparePanel::summary() const {
  const RunComparison& c = model_.comparison();
  int counts[6] = {0, 0, 0, 0, 0, 0};
  for (const ComparedShape& s : c.shapes)
    if (s.both()) ++counts[static_cast<int>(s.cls)];
  QString text = tr("%1 shape(s) in both runs: this run is faster on %2, slower on %3, the same within noise on %4")
                     .arg(c.both)
                     .arg(counts[static_cast<int>(DiffClass::Faster)])
                     .arg(counts[static_cast<int>(DiffClass::Slower)])
                     .arg(counts[static_cast<int>(DiffClass::Same)]);
  if (const int n = counts[static_cast<int>(DiffClass::NotComparable)])
    text += tr(", not comparable on %1 (measured with another method)").arg(n);
  if (const auto n = std::count_if(c.shapes.begin(), c.shapes.end(),
                                   [](const ComparedShape& s) { return !s.conditions_note.empty(); }))
    text += tr("; %1 compare numbers taken at SM clocks apart (\"clocks differ\")").arg(n);
  text += tr("; %1 only in this run, %2 only in %3. A comparison: nothing here is written to the registry.")
              .arg(c.only_run)
              .arg(c.only_other)
              .arg(qstr(other_->run_name));
  return text;
}

void RunComparePanel::showConfigDiff(int row) {
  if (row < 0 || row >= model_.rowCount()) {
    configPanel_->clear(tr("Select a shape to compare its two configs parameter by parameter."));
    return;
  }
  const int changed = configPanel_->setChanges(model_.changes(row));
  const ComparedShape& s = model_.comparison().shapes[static_cast<std::size_t>(row)];
  const QString label = model_.keyLabels().label(s.key).toHtmlEscaped();
  configPanel_->setTitle(!s.both()      ? tr("<b>%1</b>: %2").arg(label, model_.verdictText(s))
                         : changed == 0 ? tr("<b>%1</b>: the same config").arg(label)
                                        : tr("<b>%1</b>: %2 parameter(s) differ (≠)").arg(label).arg(changed),
                         model_.keyLabels().toolTip(s.key), RunCompareModel::conditionsText(s));
}

void RunComparePanel::showMessage(const QString& text, bool error) { showStatus(status_, text, error); }

const ConfigDiffModel* RunComparePanel::configDiff() const { return configPanel_->model(); }

QString RunComparePanel::titleText() const { return title_->text(); }
QString RunComparePanel::configTitle() const { return configPanel_->titleText(); }
QString RunComparePanel::statusText() const { return status_->text(); }

}  // namespace ktune::gui
