#include "ktune/widgets/config_diff_panel.h"

#include <QHeaderView>
#include <QLabel>
#include <QTableView>
#include <QVBoxLayout>

#include "ktune/widgets/diff_model.h"

namespace ktune::gui {

ConfigDiffPanel::ConfigDiffPanel(const QString& viewName, QWidget* parent) : QWidget(parent) {
  title_ = new QLabel;
  title_->setWordWrap(true);
  auto* view = new QTableView;
  view->setObjectName(viewName);
  view->setModel(&model_);
  view->verticalHeader()->hide();
  view->verticalHeader()->setDefaultSectionSize(20);
  view->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  view->horizontalHeader()->setStretchLastSection(true);
  setMinimumWidth(260);
  setMaximumWidth(380);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(title_);
  layout->addWidget(view, 1);
}

void ConfigDiffPanel::clear(const QString& prompt) {
  model_.setChanges({});
  title_->setText(prompt);
}

int ConfigDiffPanel::setChanges(std::vector<ParameterChange> changes) {
  model_.setChanges(std::move(changes));
  return model_.changedCount();
}

void ConfigDiffPanel::setTitle(const QString& html, const QString& toolTip, const QString& note) {
  title_->setText(note.isEmpty()
                      ? html
                      : html + QStringLiteral("<p style='color:%1'>%2</p>")
                                   .arg(diffClassColor(DiffClass::NotComparable).name(), note.toHtmlEscaped()));
  title_->setToolTip(toolTip);
}

QString ConfigDiffPanel::titleText() const { return title_->text(); }

}  // namespace ktune::gui
