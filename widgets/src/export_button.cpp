#include "ktune/widgets/export_button.h"

#include <QDir>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QMenu>
#include <QMessageBox>
#include <QSettings>

#include "ktune/error.h"

namespace ktune::gui {

ExportButton::ExportButton(std::function<QString()> name, std::function<void(const QString&)> save, QWidget* owner)
    : name_(std::move(name)), save_(std::move(save)), owner_(owner) {
  setIcon(QIcon(QStringLiteral(":/icons/export.svg")));
  setText(tr("Export"));
  setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  setPopupMode(QToolButton::InstantPopup);
  setMenu(new QMenu(this));
}

void ExportButton::addFormat(const QString& suffix, const QString& text) {
  menu()->addAction(text, owner_, [this, suffix] {
    QSettings settings;
    const QString dir = settings.value(QStringLiteral("folders/export"), QDir::homePath()).toString();
    const QString file =
        QFileDialog::getSaveFileName(owner_, tr("Export chart"), QDir(dir).filePath(name_() + '.' + suffix),
                                     suffix.toUpper() + QStringLiteral(" (*.") + suffix + ')');
    if (file.isEmpty()) return;
    settings.setValue(QStringLiteral("folders/export"), QFileInfo(file).absolutePath());
    try {
      save_(file);
    } catch (const InputError& e) {
      QMessageBox::warning(owner_, tr("Export failed"), QString::fromUtf8(e.what()));
    }
  });
}

QHBoxLayout* exportBar(QWidget* options, ExportButton* button) {
  auto* bar = new QHBoxLayout;
  bar->setContentsMargins(0, 0, 0, 0);
  if (options) bar->addWidget(options);
  bar->addStretch();
  bar->addWidget(button);
  return bar;
}

}  // namespace ktune::gui
