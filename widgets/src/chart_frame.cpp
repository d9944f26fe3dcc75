#include "ktune/widgets/chart_frame.h"

#include <QLabel>
#include <QMenu>
#include <QVBoxLayout>

#include "ktune/error.h"
#include "ktune/files.h"
#include "ktune/widgets/export_button.h"
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

  button_ = new ExportButton([this] { return objectName(); }, [this](const QString& file) { exportTo(file); }, this);
  button_->addFormat(QStringLiteral("png"), tr("Save as PNG…"));
  button_->addFormat(QStringLiteral("svg"), tr("Save as SVG…"));

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  layout->setSpacing(2);
  layout->addLayout(exportBar(options, button_));
  layout->addWidget(picture_, 1);
}

void ChartFrame::setHeading(const QString& heading) { heading_->setText(heading); }

QString ChartFrame::heading() const { return heading_->text(); }

QString ChartFrame::exportTitle() const { return title_ ? title_() : heading(); }

void ChartFrame::setCsv(std::function<std::string()> csv) {
  const bool had = hasCsv();
  csv_ = std::move(csv);
  if (!had && csv_) button_->addFormat(QStringLiteral("csv"), tr("Save data as CSV…"));
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

QMenu* ChartFrame::exportMenu() const { return button_->menu(); }

}  // namespace ktune::gui
