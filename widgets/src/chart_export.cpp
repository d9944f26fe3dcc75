// What leaves the landscape: a chart as PNG or SVG titled with the run and the shape it shows, so
// a picture stands alone in a report, and the chart's data as CSV, every point the chart holds
// (drawn or decimated away), for a tuner's own plots.
#include <QCoreApplication>
#include <QPainter>
#include <QSvgGenerator>

#include "ktune/csv.h"
#include "ktune/error.h"
#include "ktune/files.h"
#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/trial_chart.h"
#include "ktune/widgets/trials_model.h"

namespace ktune::gui {

namespace {
std::string number(double v) { return sstr(QString::number(v, 'g', 12)); }
}  // namespace

void exportWidget(QWidget* widget, const QString& file, const QString& title, const QString& caption) {
  // Layouts still pending (a chart's axes and legend are laid out on a posted event) are done
  // first: a picture taken before would show the axes of an empty chart.
  QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
  QFont captionFont = widget->font();
  const QFontMetrics fm(captionFont);
  const int band = caption.isEmpty() ? 0 : fm.height() * static_cast<int>(caption.count(QLatin1Char('\n')) + 1) + 8;
  const QSize size(widget->width(), widget->height() + band);
  const auto paint = [&](QPainter& painter) {
    if (band > 0) {
      painter.fillRect(QRect(0, 0, size.width(), band), Qt::white);
      painter.setFont(captionFont);
      painter.setPen(QColor(0x42, 0x42, 0x42));
      painter.drawText(QRect(4, 4, size.width() - 8, band - 4), Qt::AlignHCenter | Qt::AlignTop, caption);
    }
    widget->render(&painter, QPoint(0, band));
  };
  if (file.endsWith(QLatin1String(".svg"), Qt::CaseInsensitive)) {
    QSvgGenerator svg;
    svg.setFileName(file);
    svg.setSize(size);
    svg.setViewBox(QRect(QPoint(0, 0), size));
    svg.setTitle(title.isEmpty() ? widget->windowTitle() : title);
    QPainter painter;
    if (!painter.begin(&svg))
      throw InputError("cannot write " + sstr(file) + ": check that its folder exists and is writable");
    paint(painter);
    painter.end();
    return;
  }
  const qreal scale = 2;  // crisp in documents
  QImage image(size * scale, QImage::Format_ARGB32);
  image.setDevicePixelRatio(scale);
  image.fill(Qt::white);
  {
    QPainter painter(&image);
    paint(painter);
  }
  if (!image.save(file))
    throw InputError("cannot write " + sstr(file) + ": use a .png, .svg or .csv name in a writable folder");
}

void writeExport(const QString& file, const std::string& text) {
  try {
    write_file_atomic(sstr(file), text);
  } catch (const std::exception& e) {
    throw InputError(std::string(e.what()) + ": choose a writable folder");
  }
}

QString TrialChartView::exportContext() const {
  const QStringList keys = model_->problemKeys();
  const QString shape = !shape_.isEmpty()  ? shape_
                        : keys.size() == 1 ? keys.front()
                                           : tr("all %1 shapes").arg(keys.size());
  const QString run = model_->runName();
  return run.isEmpty() ? shape : tr("run %1 · %2").arg(run, shape);
}

QString TrialChartView::exportTitle() const { return decoratedTitle() + QStringLiteral(" · ") + exportContext(); }

void TrialChartView::exportTo(const QString& file) {
  if (dirty_) refresh();
  if (file.endsWith(QLatin1String(".csv"), Qt::CaseInsensitive)) {
    writeExport(file, csv());
    return;
  }
  // The picture says which run and shape it shows above the chart's own title.
  exportWidget(this, file, exportTitle(), exportContext());
}

std::string TrialChartView::csv() const {
  std::vector<std::string> header = {"trial", "shape", "status", sstr(xTitle()), sstr(yTitle())};
  const bool bars = drawsSpread();
  if (bars) header.insert(header.end(), {"bar low (median - std, within min)", "bar high (median + std, within max)"});
  std::string out = csv::format_record(header);
  for (const Point& p : points_) {
    const Trial& t = model_->trial(p.row);
    std::vector<std::string> row = {std::to_string(t.id), t.problem_key, to_string(t.status), sstr(xText(t, p.x)),
                                    p.band ? std::string() : number(p.y)};
    double low, high;
    if (bars && rawSpreadOf(t, &low, &high))
      row.insert(row.end(), {number(low), number(high)});
    else if (bars)
      row.insert(row.end(), {std::string(), std::string()});
    out += csv::format_record(row);
  }
  return out;
}

}  // namespace ktune::gui
