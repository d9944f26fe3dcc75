#include "ktune/widgets/chart_frame.h"

#include <QDir>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QMessageBox>
#include <QSettings>
#include <QToolButton>
#include <QVBoxLayout>

#include "ktune/error.h"
#include "ktune/files.h"
#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/trial_chart.h"

namespace ktune::gui {

ChartFrame::ChartFrame(const QString& name, QWidget* chart, QWidget* options, QWidget* parent)
    : QWidget(parent), chart_(chart) {
  setObjectName(name);
  heading_ = new QLabel;
  heading_->setObjectName(QStringLiteral("heading"));
  heading_->setWordWrap(true);
  QFont bold = heading_->font();
  bold.setBold(true);
  heading_->setFont(bold);
  picture_ = new QWidget;
  picture_->setAutoFillBackground(true);
  auto* pictureLayout = new QVBoxLayout(picture_);
  pictureLayout->setContentsMargins(4, 2, 4, 2);
  pictureLayout->addWidget(heading_);
  pictureLayout->addWidget(chart, 1);

  auto* button = new QToolButton;
  button->setIcon(QIcon(QStringLiteral(":/icons/export.svg")));
  button->setText(tr("Export"));
  button->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  button->setPopupMode(QToolButton::InstantPopup);
  menu_ = new QMenu(button);
  button->setMenu(menu_);
  addExport(QStringLiteral("png"), tr("Save as PNG…"));
  addExport(QStringLiteral("svg"), tr("Save as SVG…"));

  auto* bar = new QHBoxLayout;
  bar->setContentsMargins(0, 0, 0, 0);
  if (options) bar->addWidget(options);
  bar->addStretch();
  bar->addWidget(button);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  layout->setSpacing(2);
  layout->addLayout(bar);
  layout->addWidget(picture_, 1);
}

void ChartFrame::setHeading(const QString& heading) { heading_->setText(heading); }

QString ChartFrame::heading() const { return heading_->text(); }

QString ChartFrame::exportTitle() const { return title_ ? title_() : heading(); }

void ChartFrame::setCsv(std::function<std::string()> csv) {
  const bool had = hasCsv();
  csv_ = std::move(csv);
  if (!had && csv_) addExport(QStringLiteral("csv"), tr("Save data as CSV…"));
}

void ChartFrame::addExport(const QString& suffix, const QString& text) {
  menu_->addAction(text, this, [this, suffix] {
    QSettings settings;
    const QString dir = settings.value(QStringLiteral("folders/export"), QDir::homePath()).toString();
    const QString file =
        QFileDialog::getSaveFileName(this, tr("Export chart"), QDir(dir).filePath(name() + '.' + suffix),
                                     suffix.toUpper() + QStringLiteral(" (*.") + suffix + ')');
    if (file.isEmpty()) return;
    settings.setValue(QStringLiteral("folders/export"), QFileInfo(file).absolutePath());
    try {
      exportTo(file);
    } catch (const InputError& e) {
      QMessageBox::warning(this, tr("Export failed"), QString::fromUtf8(e.what()));
    }
  });
}

void ChartFrame::exportTo(const QString& file) {
  if (file.endsWith(QLatin1String(".csv"), Qt::CaseInsensitive)) {
    if (!csv_) throw InputError("the " + sstr(name()) + " chart has no data to write as CSV: save it as .png or .svg");
    try {
      write_file_atomic(sstr(file), csv_());
    } catch (const std::exception& e) {
      throw InputError(std::string(e.what()) + ": choose a writable folder");
    }
    return;
  }
  // The picture says which run and shape it shows; the page keeps its short heading.
  const QString shown = heading_->text();
  heading_->setText(exportTitle());
  picture_->layout()->activate();
  try {
    exportWidget(picture_, file);
  } catch (...) {
    heading_->setText(shown);
    throw;
  }
  heading_->setText(shown);
}

}  // namespace ktune::gui
