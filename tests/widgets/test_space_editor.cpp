// The search-space editor recounts the space live as it is edited and marks bad values and
// constraints in place; the shapes table expands shape lists and refuses bad edits.
#include <QSignalSpy>
#include <QtTest>

#include "ktune/backends.h"
#include "ktune/error.h"
#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/setup_page.h"
#include "ktune/widgets/shapes_model.h"
#include "ktune/widgets/space_editor.h"

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
    QVERIFY(params->setData(params->index(0, ParametersModel::ValuesColumn), QStringLiteral("16, 32, 64, 128"), Qt::EditRole));
    waitForCount(editor);
    QCOMPARE(editor.counts().total, std::uint64_t(8));
    QCOMPARE(editor.counts().valid.value(), std::uint64_t(5));

    auto* constraints = editor.constraintsModel();
    QVERIFY(constraints->setData(constraints->index(0, ConstraintsModel::ExprColumn), QStringLiteral("BM*BN <= 2048"), Qt::EditRole));
    waitForCount(editor);
    QCOMPARE(editor.counts().valid.value(), std::uint64_t(7));
    QVERIFY(editor.countsText().contains(QStringLiteral("7")));

    // A constraint on the problem's variables uses the context.
    QVERIFY(constraints->insertRows(1, 1));
    QVERIFY(constraints->setData(constraints->index(1, ConstraintsModel::ExprColumn), QStringLiteral("BM <= M * 2"), Qt::EditRole));
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

    QVERIFY(constraints->setData(constraints->index(1, ConstraintsModel::ExprColumn), QStringLiteral("BM <= "), Qt::EditRole));
    waitForCount(editor);
    QVERIFY(!marked(constraints, 0, 0));
    QVERIFY(marked(constraints, 1, 0));
    QVERIFY(!editor.counts().valid);
    QVERIFY(editor.countsText().contains(QStringLiteral("constraint")));
    QVERIFY_THROWS_EXCEPTION(InputError, editor.space());

    QVERIFY(constraints->setData(constraints->index(1, ConstraintsModel::ExprColumn), QStringLiteral("BQ < 4"), Qt::EditRole));
    waitForCount(editor);
    QVERIFY(marked(constraints, 1, 0));
    QVERIFY(constraints->index(1, 0).data(Qt::ToolTipRole).toString().contains(QStringLiteral("BQ")));

    QVERIFY(constraints->setData(constraints->index(1, ConstraintsModel::ExprColumn), QStringLiteral("BM < 4 * M"), Qt::EditRole));
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
    QVERIFY(params->index(1, ParametersModel::ValuesColumn).data(Qt::ToolTipRole).toString().contains(QStringLiteral("x16")));
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
};

QTEST_MAIN(TestSpaceEditor)
#include "test_space_editor.moc"
