// The search-space editor recounts the space live as it is edited and marks bad values and
// constraints in place; the shapes table expands shape lists and refuses bad edits.
#include <QCheckBox>
#include <QComboBox>
#include <QListWidget>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTableWidget>
#include <QtTest>

#include <nlohmann/json.hpp>

#include "ktune/backends.h"
#include "ktune/error.h"
#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/setup_page.h"
#include "ktune/widgets/shapes_model.h"
#include "ktune/widgets/space_editor.h"
#include "ktune/widgets/values_delegate.h"

using namespace ktune;
using namespace ktune::gui;

class TestSpaceEditor : public QObject {
  Q_OBJECT

  // Waits for the next live count, which is debounced and computed off the UI thread.
  static void waitForCount(SpaceEditor& editor) {
    QSignalSpy spy(&editor, &SpaceEditor::countsUpdated);
    QVERIFY(spy.wait(5000));
  }

  static bool marked(const QAbstractItemModel* model, int row, int column) {
    return model->index(row, column).data(Qt::BackgroundRole).isValid() &&
           !model->index(row, column).data(Qt::ToolTipRole).toString().isEmpty();
  }

 private slots:
  void initTestCase() { initialize(); }

  void countsFollowEdits() {
    SpaceEditor editor;
    editor.setContexts({Variables{{"M", 16}, {"smem", 4096}}});
    editor.setSpace(SearchSpace({{"BM", {16, 32, 64}, ""}, {"BN", {16, 32}, ""}}, {{"BM*BN <= 1024", ""}}));
    waitForCount(editor);
    QCOMPARE(editor.counts().total, std::uint64_t(6));
    QCOMPARE(editor.counts().valid.value(), std::uint64_t(5));  // 64x32 is pruned

    auto* params = editor.parametersModel();
    QVERIFY(params->setData(params->index(0, ParametersModel::ValuesColumn), QStringLiteral("16, 32, 64, 128"),
                            Qt::EditRole));
    waitForCount(editor);
    QCOMPARE(editor.counts().total, std::uint64_t(8));
    QCOMPARE(editor.counts().valid.value(), std::uint64_t(5));

    auto* constraints = editor.constraintsModel();
    QVERIFY(constraints->setData(constraints->index(0, ConstraintsModel::ExprColumn), QStringLiteral("BM*BN <= 2048"),
                                 Qt::EditRole));
    waitForCount(editor);
    QCOMPARE(editor.counts().valid.value(), std::uint64_t(7));
    QVERIFY(editor.countsText().contains(QStringLiteral("7")));

    // A constraint on the problem's variables uses the context.
    QVERIFY(constraints->insertRows(1, 1));
    QVERIFY(constraints->setData(constraints->index(1, ConstraintsModel::ExprColumn), QStringLiteral("BM <= M * 2"),
                                 Qt::EditRole));
    waitForCount(editor);
    QCOMPARE(editor.counts().valid.value(), std::uint64_t(4));  // BM in {16, 32}

    // Summed over two shapes.
    editor.setContexts({Variables{{"M", 16}, {"smem", 4096}}, Variables{{"M", 64}, {"smem", 4096}}});
    waitForCount(editor);
    QCOMPARE(editor.counts().valid.value(), std::uint64_t(4 + 7));
  }

  void invalidExpressionsAreMarkedInPlace() {
    SpaceEditor editor;
    editor.setContexts({Variables{{"M", 16}}});
    editor.setSpace(SearchSpace({{"BM", {16, 32}, ""}}, {{"BM >= 16", ""}, {"BM <= 64", ""}}));
    waitForCount(editor);
    auto* constraints = editor.constraintsModel();
    QVERIFY(!marked(constraints, 0, 0) && !marked(constraints, 1, 0));

    QVERIFY(constraints->setData(constraints->index(1, ConstraintsModel::ExprColumn), QStringLiteral("BM <= "),
                                 Qt::EditRole));
    waitForCount(editor);
    QVERIFY(!marked(constraints, 0, 0));
    QVERIFY(marked(constraints, 1, 0));
    QVERIFY(!editor.counts().valid);
    QVERIFY(editor.countsText().contains(QStringLiteral("constraint")));
    QVERIFY_THROWS_EXCEPTION(InputError, editor.space());

    QVERIFY(constraints->setData(constraints->index(1, ConstraintsModel::ExprColumn), QStringLiteral("BQ < 4"),
                                 Qt::EditRole));
    waitForCount(editor);
    QVERIFY(marked(constraints, 1, 0));
    QVERIFY(constraints->index(1, 0).data(Qt::ToolTipRole).toString().contains(QStringLiteral("BQ")));

    QVERIFY(constraints->setData(constraints->index(1, ConstraintsModel::ExprColumn), QStringLiteral("BM < 4 * M"),
                                 Qt::EditRole));
    waitForCount(editor);
    QVERIFY(!marked(constraints, 1, 0));
    QCOMPARE(editor.counts().valid.value(), std::uint64_t(2));
  }

  void badValuesAreMarkedInPlace() {
    SpaceEditor editor;
    editor.setContexts({Variables{}});
    editor.setSpace(SearchSpace({{"BM", {16, 32}, ""}, {"BN", {8}, ""}}, {}));
    waitForCount(editor);
    auto* params = editor.parametersModel();
    QVERIFY(params->setData(params->index(1, ParametersModel::ValuesColumn), QStringLiteral("8, x16"), Qt::EditRole));
    waitForCount(editor);
    QVERIFY(marked(params, 1, ParametersModel::ValuesColumn));
    QVERIFY(params->index(1, ParametersModel::ValuesColumn)
                .data(Qt::ToolTipRole)
                .toString()
                .contains(QStringLiteral("x16")));
    QVERIFY(!marked(params, 0, ParametersModel::ValuesColumn));
    QVERIFY(!editor.counts().valid);
    QVERIFY_THROWS_EXCEPTION(InputError, editor.space());

    QVERIFY(params->setData(params->index(1, ParametersModel::NameColumn), QStringLiteral("BM"), Qt::EditRole));
    QVERIFY(marked(params, 1, ParametersModel::NameColumn));  // duplicate name
    QVERIFY(params->setData(params->index(1, ParametersModel::NameColumn), QStringLiteral("BN"), Qt::EditRole));
    QVERIFY(params->setData(params->index(1, ParametersModel::ValuesColumn), QStringLiteral("8 16 32"), Qt::EditRole));
    waitForCount(editor);
    QVERIFY(!marked(params, 1, ParametersModel::ValuesColumn));
    QCOMPARE(editor.counts().total, std::uint64_t(6));
    QCOMPARE(editor.space().parameters()[1].values, (std::vector<ParamValue>{8, 16, 32}));
  }

  // Booleans are edited as two checkboxes, strings as a list: through the view's own delegate,
  // as a user does, down to the space JSON the tuner and the session files get.
  void booleansAreCheckboxesAndStringsLists() {
    SpaceEditor editor;
    editor.setContexts({Variables{}});
    editor.setSpace(
        SearchSpace({{"BM", {16, 32}, ""}, {"permute_x", {true, false}, ""}, {"cache_modifier", {".cg"}, ""}}, {}));
    waitForCount(editor);
    QCOMPARE(editor.counts().total, std::uint64_t(4));
    QTableView* view = editor.parametersView();
    auto* delegate = view->itemDelegateForColumn(ParametersModel::ValuesColumn);
    auto* params = editor.parametersModel();
    const QModelIndex ints = params->index(0, ParametersModel::ValuesColumn);
    const QModelIndex bools = params->index(1, ParametersModel::ValuesColumn);
    const QModelIndex strings = params->index(2, ParametersModel::ValuesColumn);
    QCOMPARE(bools.data(ValuesDelegate::KindRole).toString(), QStringLiteral("boolean"));
    QCOMPARE(strings.data(ValuesDelegate::KindRole).toString(), QStringLiteral("string"));

    // Integers stay text.
    std::unique_ptr<QWidget> intEditor(delegate->createEditor(view->viewport(), {}, ints));
    QVERIFY(!intEditor->findChild<QCheckBox*>() && !intEditor->findChild<QListWidget*>());

    std::unique_ptr<QWidget> boolEditor(delegate->createEditor(view->viewport(), {}, bools));
    delegate->setEditorData(boolEditor.get(), bools);
    auto* yes = boolEditor->findChild<QCheckBox*>(QStringLiteral("true"));
    auto* no = boolEditor->findChild<QCheckBox*>(QStringLiteral("false"));
    QVERIFY(yes && no && yes->isChecked() && no->isChecked());
    no->setChecked(false);
    delegate->setModelData(boolEditor.get(), params, bools);
    waitForCount(editor);
    QCOMPARE(editor.counts().total, std::uint64_t(2));
    // None ticked: no candidates, marked in place and refused.
    yes->setChecked(false);
    delegate->setModelData(boolEditor.get(), params, bools);
    QVERIFY(marked(params, 1, ParametersModel::ValuesColumn));
    QVERIFY_THROWS_EXCEPTION(InputError, editor.space());
    yes->setChecked(true);
    delegate->setModelData(boolEditor.get(), params, bools);

    std::unique_ptr<QWidget> stringEditor(delegate->createEditor(view->viewport(), {}, strings));
    delegate->setEditorData(stringEditor.get(), strings);
    auto* list = stringEditor->findChild<QListWidget*>();
    QVERIFY(list);
    QCOMPARE(list->count(), 1);
    QCOMPARE(list->item(0)->text(), QStringLiteral(".cg"));
    list->addItem(QStringLiteral(".ca"));
    list->addItem(QStringLiteral("\"\""));  // the empty string, as written
    list->addItem(QStringLiteral(" "));     // an item added and never filled in
    delegate->setModelData(stringEditor.get(), params, strings);
    waitForCount(editor);
    QCOMPARE(editor.counts().total, std::uint64_t(2 * 1 * 3));

    const nlohmann::json j = editor.space().to_json();
    QCOMPARE(j["parameters"][1]["values"], nlohmann::json::parse("[true]"));
    QCOMPARE(j["parameters"][2]["values"], nlohmann::json::parse(R"([".cg", ".ca", ""])"));
    QCOMPARE(j["parameters"][0]["values"], nlohmann::json::parse("[16, 32]"));
    QCOMPARE(SearchSpace::from_json(j), editor.space());

    // A string that would read back as a number is marked, not silently turned into one.
    list->addItem(QStringLiteral("64"));
    delegate->setModelData(stringEditor.get(), params, strings);
    QVERIFY(marked(params, 2, ParametersModel::ValuesColumn));
    QVERIFY(strings.data(Qt::ToolTipRole).toString().contains(QStringLiteral("64")));
  }

  // A space given as an explicit list of configs is shown as that list, keeps its constraints
  // editable, and comes back unchanged.
  void configListIsShownAsATable() {
    SpaceEditor editor;
    editor.setContexts({Variables{{"M", 16}}});
    const SearchSpace list = SearchSpace::from_json(nlohmann::json::parse(R"({
      "configs": [{"BM": 16, "permute_x": true, "cache_modifier": ".cg"},
                  {"BM": 64, "permute_x": false, "cache_modifier": ""},
                  {"BM": 128, "permute_x": true, "cache_modifier": ".cg"}],
      "constraints": ["BM <= 4 * M"]})"));
    QVERIFY(list.is_list());
    editor.setSpace(list);
    waitForCount(editor);
    QVERIFY(editor.isList());
    QVERIFY(editor.configsView()->isVisibleTo(&editor));
    QVERIFY(!editor.parametersView()->isVisibleTo(&editor));
    QCOMPARE(editor.configsView()->rowCount(), 3);
    QCOMPARE(editor.configsView()->columnCount(), 3);
    QCOMPARE(editor.configsView()->horizontalHeaderItem(0)->text(), QStringLiteral("BM"));
    // Columns as the core orders the list's parameters (a JSON object's keys come sorted).
    QCOMPARE(editor.configsView()->horizontalHeaderItem(2)->text(), QStringLiteral("permute_x"));
    QCOMPARE(editor.configsView()->item(1, 1)->text(), QStringLiteral("\"\""));
    QCOMPARE(editor.configsView()->item(1, 2)->text(), QStringLiteral("false"));
    QCOMPARE(editor.configsView()->item(2, 0)->text(), QStringLiteral("128"));
    QCOMPARE(editor.counts().total, std::uint64_t(3));
    QCOMPARE(editor.counts().valid.value(), std::uint64_t(2));  // BM=128 > 4*16
    QCOMPARE(editor.space(), list);
    QCOMPARE(editor.space().to_json(), list.to_json());

    auto* constraints = editor.constraintsModel();
    QVERIFY(constraints->setData(constraints->index(0, ConstraintsModel::ExprColumn), QStringLiteral("BM <= 8 * M"),
                                 Qt::EditRole));
    waitForCount(editor);
    QCOMPARE(editor.counts().valid.value(), std::uint64_t(3));
    QVERIFY(editor.space().is_list());

    // Back to a product space: the parameters table returns.
    editor.setSpace(SearchSpace({{"BM", {16}, ""}}, {}));
    QVERIFY(!editor.isList());
    QVERIFY(editor.parametersView()->isVisibleTo(&editor));
    QVERIFY(!editor.configsView()->isVisibleTo(&editor));
  }

  void setupPageCountsTheFamilySpaceForItsShapes() {
    auto backends = make_backends();
    SetupPage page(backends);
    SpaceEditor* editor = page.spaceEditor();
    QVERIFY(!page.currentFamily().name.empty());
    QVERIFY(page.addShapes(QStringLiteral("M=16,64 N=256 K=256")));
    QCOMPARE(page.shapesModel()->rowCount(), 2);
    QTRY_VERIFY_WITH_TIMEOUT(editor->counts().valid.has_value(), 10000);
    const std::uint64_t valid = *editor->counts().valid;
    QVERIFY(valid > 0);
    QVERIFY(valid < 2 * editor->counts().total);  // the family's constraints prune

    // Bad shape text is refused with a message and adds nothing.
    QVERIFY(!page.addShapes(QStringLiteral("M=16 Q=3")));
    QVERIFY(!page.addShapes(QStringLiteral("M=abc N=256 K=256")));
    QCOMPARE(page.shapesModel()->rowCount(), 2);
    // Cells refuse values that are not positive integers.
    ShapesModel* shapes = page.shapesModel();
    QSignalSpy rejected(shapes, &ShapesModel::editRejected);
    QVERIFY(!shapes->setData(shapes->index(0, 0), QStringLiteral("-4"), Qt::EditRole));
    QCOMPARE(rejected.count(), 1);
    QVERIFY(shapes->setData(shapes->index(0, 0), QStringLiteral("32"), Qt::EditRole));
    QCOMPARE(shapes->problems()[0].field("M"), std::string("32"));

    // The session round-trips through JSON.
    QTemporaryDir dir;
    const QString file = dir.filePath(QStringLiteral("session.json"));
    page.saveSessionTo(file);
    SetupPage other(backends);
    other.loadSessionFrom(file);
    QCOMPARE(other.shapesModel()->problems(), page.shapesModel()->problems());
    QCOMPARE(other.session().space, page.session().space);
    QCOMPARE(other.session().to_json(), page.session().to_json());
    QVERIFY_THROWS_EXCEPTION(InputError, other.loadSessionFrom(dir.filePath(QStringLiteral("missing.json"))));
  }
  // The tp split offers the family's own splits: out and in for gemm, heads for attention.
  void tpSplitsAreTheFamilysOwn() {
    auto backends = make_backends();
    SetupPage page(backends);
    QComboBox* split = nullptr;
    QSpinBox* tp = nullptr;
    for (auto* c : page.findChildren<QComboBox*>())
      if (c->findData(QStringLiteral("none")) >= 0) split = c;
    for (auto* b : page.findChildren<QSpinBox*>())
      if (b->prefix() == QStringLiteral("tp ")) tp = b;
    QVERIFY(split && tp);
    QCOMPARE(page.currentFamily().name, std::string("gemm"));
    QVERIFY(split->findData(QStringLiteral("out")) >= 0 && split->findData(QStringLiteral("in")) >= 0);
    QCOMPARE(split->findData(QStringLiteral("heads")), -1);

    Session s = page.session();
    s.family = "paged_attention";
    s.problems.clear();
    page.setSession(s);
    QCOMPARE(page.currentFamily().name, std::string("paged_attention"));
    QCOMPARE(split->findData(QStringLiteral("out")), -1);
    const int heads = split->findData(QStringLiteral("heads"));
    QVERIFY(heads >= 0);
    QVERIFY2(split->itemText(heads).contains(QStringLiteral("num_kv_heads")), qPrintable(split->itemText(heads)));
    split->setCurrentIndex(heads);
    tp->setValue(4);
    QVERIFY(
        page.addShapes(QStringLiteral("num_sequences=4 num_q_heads=32 num_kv_heads=8 head_dim=128 page_size=16 "
                                      "max_model_len=512")));
    const Problem p = page.shapesModel()->problems().at(0);
    QCOMPARE(p.field("num_q_heads"), std::string("8"));
    QCOMPARE(p.field("num_kv_heads"), std::string("2"));
    QCOMPARE(p.tp_size, 4);
  }
};

QTEST_MAIN(TestSpaceEditor)
#include "test_space_editor.moc"
