#include "ktune/widgets/replay_dialog.h"

#include <QComboBox>
#include <QCoreApplication>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>

#include "ktune/replay_backend.h"
#include "ktune/run_store.h"
#include "ktune/widgets/qt_types.h"

namespace ktune::gui {

ReplayDialog::ReplayDialog(QWidget* parent) : QDialog(parent) {
  setWindowTitle(tr("Replay a recorded run"));
  runDir_ = new QLineEdit;
  runDir_->setPlaceholderText(tr("a run folder (run_metadata.json, trials.csv)"));
  auto* browse = new QPushButton(tr("Browse…"));
  strategy_ = new QComboBox;
  for (const std::string& name : strategy_names()) strategy_->addItem(qstr(name));
  budget_ = new QSpinBox;
  budget_->setRange(0, 1000000);
  budget_->setSpecialValueText(tr("all"));
  budget_->setValue(50);
  budget_->setToolTip(tr("Configs the strategy may try per shape (exhaustive ignores it)"));
  seed_ = new QSpinBox;
  seed_->setRange(0, 1 << 30);
  pace_ = new QDoubleSpinBox;
  pace_->setRange(0, 5000);
  pace_->setDecimals(0);
  pace_->setSuffix(tr(" ms"));
  pace_->setValue(100);
  pace_->setToolTip(tr("How long each recorded answer takes: 0 replays at once, more lets you watch the search"));
  message_ = new QLabel;
  message_->setWordWrap(true);
  message_->setStyleSheet(QStringLiteral("color:#c62828"));
  buttons_ = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
  buttons_->button(QDialogButtonBox::Ok)->setText(tr("Replay"));

  auto* dirRow = new QHBoxLayout;
  dirRow->addWidget(runDir_, 1);
  dirRow->addWidget(browse);
  auto* form = new QFormLayout;
  form->addRow(tr("Recorded run:"), dirRow);
  form->addRow(tr("Strategy:"), strategy_);
  form->addRow(tr("Budget per shape:"), budget_);
  form->addRow(tr("Seed:"), seed_);
  form->addRow(tr("Time per answer:"), pace_);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(
      new QLabel(tr("The strategy proposes configs and the recorded trials answer, with no device: watch "
                    "how quickly it finds the landscape's best.")));
  layout->addLayout(form);
  layout->addWidget(message_);
  layout->addWidget(buttons_);

  connect(browse, &QPushButton::clicked, this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Recorded run folder"), runDir_->text());
    if (!dir.isEmpty()) runDir_->setText(dir);
  });
  connect(runDir_, &QLineEdit::textChanged, this, &ReplayDialog::check);
  connect(strategy_, &QComboBox::currentTextChanged, this,
          [this] { budget_->setEnabled(strategy_->currentText() != QStringLiteral("exhaustive")); });
  connect(buttons_, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons_, &QDialogButtonBox::rejected, this, &QDialog::reject);
  check();
}

void ReplayDialog::setChoice(const ReplayChoice& c) {
  runDir_->setText(c.runDir);
  strategy_->setCurrentText(qstr(c.strategy.kind));
  budget_->setValue(static_cast<int>(c.strategy.budget));
  seed_->setValue(static_cast<int>(c.strategy.seed));
  pace_->setValue(c.paceMs);
  check();
}

ReplayChoice ReplayDialog::choice() const {
  ReplayChoice c;
  c.runDir = runDir_->text();
  c.strategy.kind = sstr(strategy_->currentText());
  c.strategy.budget = static_cast<std::size_t>(budget_->value());
  c.strategy.seed = static_cast<std::uint64_t>(seed_->value());
  c.paceMs = pace_->value();
  return c;
}

QString ReplayDialog::problem() const {
  const QString dir = runDir_->text();
  if (dir.isEmpty()) return tr("Choose the run folder to replay.");
  if (!QFileInfo::exists(dir + QStringLiteral("/run_metadata.json")))
    return tr("%1 is not a run folder: it has no run_metadata.json.").arg(dir);
  return {};
}

void ReplayDialog::check() {
  const QString why = problem();
  message_->setText(runDir_->text().isEmpty() ? QString() : why);
  buttons_->button(QDialogButtonBox::Ok)->setEnabled(why.isEmpty());
}

QString replayTitle(const ReplayBackend& backend, const StrategySpec& strategy) {
  return QCoreApplication::translate("ReplayDialog",
                                     "Replay of %1 (%L2 configs recorded) by %3, seed %4: the recorded trials answer, "
                                     "no device")
      .arg(qstr(backend.metadata().run_name))
      .arg(static_cast<qulonglong>(backend.recorded_configs()))
      .arg(qstr(strategy.kind))
      .arg(strategy.seed);
}

}  // namespace ktune::gui
