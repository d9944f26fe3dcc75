#include <QPainter>
#include <QSvgGenerator>

#include "ktune/error.h"
#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/trial_chart.h"

namespace ktune::gui {

void exportWidget(QWidget* widget, const QString& file) {
  if (file.endsWith(QLatin1String(".svg"), Qt::CaseInsensitive)) {
    QSvgGenerator svg;
    svg.setFileName(file);
    svg.setSize(widget->size());
    svg.setViewBox(widget->rect());
    svg.setTitle(widget->windowTitle());
    QPainter painter;
    if (!painter.begin(&svg))
      throw InputError("cannot write " + sstr(file) + ": check that its folder exists and is writable");
    widget->render(&painter);
    painter.end();
    return;
  }
  const qreal scale = 2;  // crisp in documents
  QImage image(widget->size() * scale, QImage::Format_ARGB32);
  image.setDevicePixelRatio(scale);
  image.fill(Qt::white);
  {
    QPainter painter(&image);
    widget->render(&painter);
  }
  if (!image.save(file))
    throw InputError("cannot write " + sstr(file) + ": use a .png or .svg name in a writable folder");
}

}  // namespace ktune::gui
