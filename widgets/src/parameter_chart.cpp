#include "ktune/widgets/parameter_chart.h"

#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/trials_model.h"

namespace ktune::gui {

ParameterChart::ParameterChart(TrialsModel* model, QWidget* parent) : TrialChartView(model, parent) {}

void ParameterChart::setParameter(const QString& name) {
  if (name == parameter_) return;
  parameter_ = name;
  parameterStd_ = sstr(name);
  resetZoom();
  markDirty();
}

QString ParameterChart::xTitle() const { return parameter_.isEmpty() ? tr("(choose a parameter)") : parameter_; }
QString ParameterChart::title() const {
  return yMetric().isLatency() ? tr("Latency against a parameter")
                               : tr("%1 against a parameter").arg(yMetric().label());
}

QString ParameterChart::yTitle() const { return yMetric().label(); }

std::vector<TrialChartView::Group> ParameterChart::groups() const {
  static const QColor palette[] = {QColor(0x15, 0x65, 0xc0), QColor(0xef, 0x6c, 0x00), QColor(0x2e, 0x7d, 0x32),
                                   QColor(0x8e, 0x24, 0xaa), QColor(0xc6, 0x28, 0x28), QColor(0x00, 0x83, 0x8f),
                                   QColor(0x6d, 0x4c, 0x41), QColor(0x75, 0x75, 0x75)};
  std::vector<Group> g;
  const QStringList keys = model()->problemKeys();
  for (qsizetype i = 0; i < keys.size(); ++i) g.push_back(Group{keys[i], palette[i % std::size(palette)]});
  return g;
}

bool ParameterChart::pointFor(const Trial& t, std::int64_t /*measured*/, double* x, double* y, int* group) const {
  if (t.status != TrialStatus::Ok || parameterStd_.empty() || !t.config.has(parameterStd_) || !yMetric().valueOf(t, y))
    return false;
  if (t.config.value(parameterStd_).is_string()) return false;  // no numeric axis for strings
  *x = static_cast<double>(t.config.get(parameterStd_));
  *group = static_cast<int>(model()->problemKeys().indexOf(qstr(t.problem_key)));
  return true;
}

}  // namespace ktune::gui
