// One winner, one number: the config a problem's re-measure crowns is the winner in results.json,
// the registry and the diff, with the stats it was chosen by (its search's kept beside them,
// labelled); a winner whose number is doubtful (samples that never reached the noise target, a
// re-measure far off its search) is flagged everywhere and not applied unless asked, and a noisy
// config cannot win over a quiet one.
#include <QTemporaryDir>
#include <QtTest>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "axpy_backend.h"
#include "ktune/diff.h"
#include "ktune/error.h"
#include "ktune/files.h"
#include "ktune/registry.h"
#include "ktune/run_merge.h"
#include "ktune/run_store.h"
#include "ktune/tuner.h"
#include "lucky_backend.h"

using namespace ktune;
using namespace ktune::test;
namespace fs = std::filesystem;

class TestOneWinner : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  fs::path root() const { return dir_.path().toStdString(); }

  TuneRequest lucky(LuckyBackend& b, std::vector<ParamValue> xs, int top, const std::string& name) {
    return lucky_request(b, std::move(xs), top, root() / name);
  }

  static std::vector<std::string> warnings(const Recorder& rec) {
    std::vector<std::string> out;
    for (const auto& l : rec.all<event::Log>())
      if (l.message.rfind("warning: ", 0) == 0) out.push_back(l.message);
    return out;
  }

 private slots:
  void theWinnerCarriesTheNumberItWasChosenBy() {
    LuckyBackend b;
    Recorder rec;
    const RunSummary s = Tuner(b, b.devices()[0]).run(lucky(b, {1, 2, 3, 4}, 3, "chosen"), rec);
    const ProblemResult& r = s.results.front();
    QCOMPARE(r.best->config.key(), std::string("x=2"));
    QCOMPARE(r.choice.by, ChosenBy::Remeasure);
    QCOMPARE(r.best->stats.median_ns, 100.0);
    QCOMPARE(r.best->samples_ns.size(), std::size_t(5));
    QVERIFY(!r.choice.flags.any());
    QVERIFY(warnings(rec).empty());
    // The winner's row in the journal is named, with its search numbers.
    const auto trials = RunStore::read_trials(root() / "chosen");
    const auto row =
        std::find_if(trials.begin(), trials.end(), [&](const Trial& t) { return t.id == r.choice.trial_id; });
    QVERIFY(row != trials.end());
    QCOMPARE(row->config.key(), std::string("x=2"));
    QCOMPARE(r.choice.search.median_ns, row->stats.median_ns);

    // results.json, read back, and the registry entry apply writes hold the same number and say how
    // it was measured.
    const RunResults saved = RunStore::read_results(root() / "chosen");
    const ResultEntry& e = saved.entries.front();
    QCOMPARE(e.config.key(), std::string("x=2"));
    QCOMPARE(e.stats.median_ns, 100.0);
    QCOMPARE(e.choice.by, ChosenBy::Remeasure);
    QCOMPARE(e.choice.trial_id, r.choice.trial_id);
    const nlohmann::json j = nlohmann::json::parse(read_text_file(root() / "chosen" / "results.json"));
    QCOMPARE(j["results"][0]["chosen_by"].get<std::string>(), std::string("remeasure"));
    QCOMPARE(j["results"][0]["search"]["latency_median_ns"].get<double>(), 100.0);
    QCOMPARE(j["results"][0]["remeasured"][1]["samples_ns"].size(), std::size_t(5));
    const ApplyReport rep = apply_run(saved, root() / "reg", {});
    QCOMPARE(rep.written.size(), std::size_t(1));
    const Registry reg = Registry::load(rep.registry_file);
    const RegistryEntry* entry = reg.find("lucky", "n=1");
    QVERIFY(entry);
    QCOMPARE(entry->latency_median_ns, 100.0);
    QCOMPARE(entry->chosen_by, ChosenBy::Remeasure);
    QCOMPARE(entry->search_median_ns, 100.0);
    QCOMPARE(entry->samples_ns, r.best->samples_ns);
  }

  // The winner's number is its re-measure's, and so are the clock and power it is shown with, in
  // the result, results.json and its re-measured row; its journal row keeps the search's.
  void theWinnerCarriesTheConditionsOfItsNumber() {
    LuckyBackend b;
    Recorder rec;
    const RunSummary s = Tuner(b, b.devices()[0]).run(lucky(b, {1, 2, 3, 4}, 3, "conditions"), rec);
    const ProblemResult& r = s.results.front();
    QCOMPARE(r.best->config.key(), std::string("x=2"));
    const auto re = std::find_if(r.remeasured.begin(), r.remeasured.end(),
                                 [&](const Remeasured& m) { return m.config == r.best->config; });
    QVERIFY(re != r.remeasured.end());
    QVERIFY(!re->conditions.empty());
    QCOMPARE(conditions_of(r.best->metrics), re->conditions);
    QCOMPARE(re->conditions.at(kPowerW), 302.0);

    const auto trials = RunStore::read_trials(root() / "conditions");
    const auto row =
        std::find_if(trials.begin(), trials.end(), [&](const Trial& t) { return t.id == r.choice.trial_id; });
    QVERIFY(row != trials.end());
    // Searched first, at a cooler device's clock than the re-measure after it.
    QVERIFY(row->metrics.at(kSmClockMhz) > re->conditions.at(kSmClockMhz));
    QCOMPARE(row->metrics.at(kClockLimited), 0.0);
    QCOMPARE(re->conditions.at(kClockLimited), 1.0);

    const RunResults saved = RunStore::read_results(root() / "conditions");
    const ResultEntry& e = saved.entries.front();
    QCOMPARE(e.conditions, re->conditions);
    for (std::size_t i = 0; i < r.remeasured.size(); ++i)
      QCOMPARE(e.remeasured[i].conditions, r.remeasured[i].conditions);
    const nlohmann::json j = nlohmann::json::parse(read_text_file(root() / "conditions" / "results.json"));
    QCOMPARE(j["results"][0]["conditions"][kSmClockMhz].get<double>(), re->conditions.at(kSmClockMhz));
    QVERIFY(!j["results"][0].contains("baseline"));

    // The log line that crowns it says where it was measured.
    bool said = false;
    for (const auto& l : rec.all<event::Log>())
      said = said || (l.message.find("re-measured") != std::string::npos &&
                      l.message.find(describe(re->conditions)) != std::string::npos);
    QVERIFY(said);
  }

  // apply keeps the winner's conditions in its registry entry, read back as written; a later run on
  // a device that has heated (its clock 10 % lower) is compared with a note saying so, and classed
  // by its numbers as before.
  void theRegistryKeepsTheConditionsOfItsNumber() {
    LuckyBackend b;
    Recorder rec;
    Tuner(b, b.devices()[0]).run(lucky(b, {2, 3}, 3, "reg-conditions"), rec);
    const RunResults saved = RunStore::read_results(root() / "reg-conditions");
    const Conditions& measured = saved.entries.front().conditions;
    QVERIFY(measured.count(kSmClockMhz) && measured.count(kPowerW) && measured.count(kClockLimited));
    const ApplyReport rep = apply_run(saved, root() / "reg-cond", {});
    QCOMPARE(rep.written.size(), std::size_t(1));
    const Registry reg = Registry::load(rep.registry_file);
    QCOMPARE(reg.find("lucky", "n=1")->conditions, measured);
    QCOMPARE(Registry::from_text(read_text_file(rep.registry_file), "f", true).find("lucky", "n=1")->conditions,
             measured);
    const nlohmann::json j = nlohmann::json::parse(read_text_file(rep.registry_file));
    QCOMPARE(j["entries"]["lucky"]["n=1"]["conditions"][kSmClockMhz].get<double>(), measured.at(kSmClockMhz));

    // The same run again at once: a few MHz lower, no note.
    RegistryDiff diff = diff_run(saved, root() / "reg-cond");
    QVERIFY(diff.entries.front().conditions_note.empty());
    Tuner(b, b.devices()[0]).run(lucky(b, {2, 3}, 3, "reg-conditions-warm"), rec);
    diff = diff_run(RunStore::read_results(root() / "reg-conditions-warm"), root() / "reg-cond");
    QVERIFY2(diff.entries.front().conditions_note.empty(), diff.entries.front().conditions_note.c_str());

    // 200 samples later the device runs 10 % slower: the same 100 ns, the same class, and a note.
    b.order += std::string(200, '0');
    Tuner(b, b.devices()[0]).run(lucky(b, {2, 3}, 3, "reg-conditions-hot"), rec);
    const RunResults hot = RunStore::read_results(root() / "reg-conditions-hot");
    QVERIFY(measured.at(kSmClockMhz) / hot.entries.front().conditions.at(kSmClockMhz) > 1.03);
    diff = diff_run(hot, root() / "reg-cond");
    const DiffEntry& d = diff.entries.front();
    QCOMPARE(d.cls, DiffClass::Same);
    const auto mhz = [](const Conditions& c) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.0f MHz", c.at(kSmClockMhz));
      return std::string(buf);
    };
    QCOMPARE(d.conditions_note, "old measured at " + mhz(measured) + ", new at " + mhz(hot.entries.front().conditions) +
                                    ": the ratio carries the clock");
  }

  // Shards merged: the merged winner keeps the conditions of the shard's deciding number (its
  // re-measure's), not those of its search trial.
  void mergedShardsKeepTheWinnersConditions() {
    std::vector<fs::path> shards;
    for (std::uint32_t i = 0; i < 2; ++i) {
      LuckyBackend b;
      Recorder rec;
      TuneRequest req = lucky(b, {1, 2, 3, 4}, 3, "shard" + std::to_string(i));
      req.shard = ShardSpec{i, 2};
      Tuner(b, b.devices()[0]).run(req, rec);
      shards.push_back(req.run_dir);
    }
    merge_runs(shards, root() / "merged", {});
    const ResultEntry merged = RunStore::read_results(root() / "merged").entries.at(0);
    std::optional<ResultEntry> chosen;
    for (const auto& dir : shards)
      for (const auto& e : RunStore::read_results(dir).entries)
        if (e.config.same_values(merged.config)) chosen = e;
    QVERIFY(chosen.has_value());
    QVERIFY(!merged.conditions.empty());
    QCOMPARE(merged.conditions, chosen->conditions);
  }

  // A results.json whose conditions are not numbers is refused, naming the field.
  void malformedConditionsAreNamed() {
    LuckyBackend b;
    Recorder rec;
    Tuner(b, b.devices()[0]).run(lucky(b, {2, 3}, 3, "bad-conditions"), rec);
    const fs::path file = root() / "bad-conditions" / "results.json";
    nlohmann::json j = nlohmann::json::parse(read_text_file(file));
    j["results"][0]["remeasured"][0]["conditions"][kPowerW] = "hot";
    write_file_atomic(file, j.dump());
    try {
      RunStore::read_results(root() / "bad-conditions");
      QFAIL("a string for a power was read");
    } catch (const InputError& e) {
      QVERIFY2(std::string(e.what()).find("conditions") != std::string::npos &&
                   std::string(e.what()).find(kPowerW) != std::string::npos,
               e.what());
    }
    // A share of readings above 1 neither: apply would copy it into a registry that refuses it.
    j = nlohmann::json::parse(read_text_file(root() / "bad-conditions" / "results.json"));
    j["results"][0]["remeasured"][0]["conditions"][kPowerW] = 300;
    j["results"][0]["conditions"][kClockLimited] = 1.5;
    write_file_atomic(file, j.dump());
    try {
      RunStore::read_results(root() / "bad-conditions");
      QFAIL("a share of 1.5 was read");
    } catch (const InputError& e) {
      QVERIFY2(std::string(e.what()).find(std::string("conditions.") + kClockLimited + ": expected a share") !=
                   std::string::npos,
               e.what());
    }
  }

  // x=1's search (90 ns) was lucky; alone against the slow x=4 it wins the re-measure at 120 ns, a
  // third off its search: flagged, warned, and not applied unless asked.
  void aRemeasureFarFromTheSearchIsFlaggedAndNotApplied() {
    LuckyBackend b;
    Recorder rec;
    const RunSummary s = Tuner(b, b.devices()[0]).run(lucky(b, {1, 4}, 3, "disagree"), rec);
    const ProblemResult& r = s.results.front();
    QCOMPARE(r.best->config.key(), std::string("x=1"));
    QCOMPARE(r.best->stats.median_ns, 120.0);
    QCOMPARE(r.choice.search.median_ns, 90.0);
    QVERIFY(r.choice.flags.disagrees);
    QVERIFY(!r.choice.flags.noisy);
    const auto said = warnings(rec);
    QCOMPARE(said.size(), std::size_t(1));
    QVERIFY2(said[0].find("n=1") != std::string::npos && said[0].find("120 ns") != std::string::npos &&
                 said[0].find("90 ns") != std::string::npos,
             said[0].c_str());

    const RunResults saved = RunStore::read_results(root() / "disagree");
    QCOMPARE(saved.entries.front().choice.flags.names(), std::vector<std::string>{"remeasure_disagrees"});
    const RegistryDiff diff = diff_run(saved, root() / "reg-flagged");
    QVERIFY(diff.entries.front().new_entry.flags.disagrees);
    ApplyReport rep = apply_run(saved, root() / "reg-flagged", {});
    QVERIFY(rep.written.empty());
    QCOMPARE(rep.skipped.size(), std::size_t(1));
    QVERIFY2(rep.skip_reasons[0].find("--accept-flagged") != std::string::npos, rep.skip_reasons[0].c_str());
    QVERIFY(!fs::exists(rep.registry_file));
    ApplyOptions accept;
    accept.accept_flagged = true;
    rep = apply_run(saved, root() / "reg-flagged", accept);
    QCOMPARE(rep.written.size(), std::size_t(1));
    const Registry reg = Registry::load(rep.registry_file);
    QVERIFY(reg.find("lucky", "n=1")->flags.disagrees);
    QCOMPARE(reg.find("lucky", "n=1")->latency_median_ns, 120.0);
  }

  // x=5's median (50 ns) is the fastest, but its samples never reach the noise target: the quiet
  // x=2 wins the re-measure. Without a re-measure, x=5 wins, flagged noisy.
  void aNoisyConfigCannotWinOverAQuietOne() {
    {
      LuckyBackend b;
      Recorder rec;
      const RunSummary s = Tuner(b, b.devices()[0]).run(lucky(b, {2, 3, 5}, 3, "noisy3"), rec);
      const ProblemResult& r = s.results.front();
      QCOMPARE(r.best->config.key(), std::string("x=2"));
      QCOMPARE(r.remeasured.size(), std::size_t(3));
      QVERIFY(!r.choice.flags.any());
    }
    {
      LuckyBackend b;
      Recorder rec;
      const RunSummary s = Tuner(b, b.devices()[0]).run(lucky(b, {2, 3, 5}, 0, "noisy0"), rec);
      const ProblemResult& r = s.results.front();
      QCOMPARE(r.best->config.key(), std::string("x=5"));
      QCOMPARE(r.choice.by, ChosenBy::Search);
      QVERIFY(r.choice.flags.noisy);
      QCOMPARE(warnings(rec).size(), std::size_t(1));
      const RunResults saved = RunStore::read_results(root() / "noisy0");
      QVERIFY(saved.entries.front().choice.flags.noisy);
      QVERIFY(apply_run(saved, root() / "reg-noisy", {}).written.empty());
    }
  }

  // A lone config whose search samples are noisy is timed again (it cannot win on that number);
  // still noisy, it wins flagged.
  void aLoneNoisyBestIsRemeasured() {
    LuckyBackend b;
    Recorder rec;
    const RunSummary s = Tuner(b, b.devices()[0]).run(lucky(b, {5}, 3, "lone"), rec);
    const ProblemResult& r = s.results.front();
    QCOMPARE(r.remeasured.size(), std::size_t(1));
    QCOMPARE(r.choice.by, ChosenBy::Remeasure);
    QVERIFY(r.choice.flags.noisy);
  }

  // The baseline is timed in the re-measure's round, so its pairing and the winner's number are one
  // measurement: best_paired is the winner's stats.
  void theBaselineIsPairedInTheSameRound() {
    AxpyBackend b;
    Recorder rec;
    std::string sampled;
    rec.hook = [&](const TuneEvent& e) {
      if (std::holds_alternative<event::ProblemFinished>(e)) sampled = b.last->sampled;
    };
    TuneRequest req = request(b, "n=4096", b.family("axpy").default_space);
    const RunSummary s = Tuner(b, b.devices()[0]).run(req, rec);
    const ProblemResult& r = s.results.front();
    QCOMPARE(r.remeasured.size(), std::size_t(3));
    QVERIFY(r.baseline && r.best_paired);
    QCOMPARE(r.best_paired->median_ns, r.best->stats.median_ns);
    QVERIFY2(sampled.find("...B...B...B") != std::string::npos, sampled.c_str());
  }

  // A registry entry decided by its search and a run decided by a re-measure compare their search
  // medians, and the diff says so; two re-measured ones compare their re-measures.
  void theDiffComparesLikeWithLike() {
    LuckyBackend b;
    Recorder rec;
    Tuner(b, b.devices()[0]).run(lucky(b, {2, 3}, 0, "by-search"), rec);
    QVERIFY(!apply_run(RunStore::read_results(root() / "by-search"), root() / "reg-like", {}).written.empty());
    Tuner(b, b.devices()[0]).run(lucky(b, {2, 3}, 3, "by-remeasure"), rec);
    const RunResults remeasured = RunStore::read_results(root() / "by-remeasure");
    RegistryDiff diff = diff_run(remeasured, root() / "reg-like");
    QCOMPARE(diff.entries.front().compared, std::string("search medians"));
    QCOMPARE(diff.entries.front().old_ns, 100.0);
    QCOMPARE(diff.entries.front().new_ns, 100.0);
    QCOMPARE(diff.entries.front().cls, DiffClass::Same);

    ApplyOptions force;
    force.force = true;
    force.keys = {"n=1"};
    fs::remove_all(root() / "reg-like");
    QVERIFY(!apply_run(remeasured, root() / "reg-like", force).written.empty());
    diff = diff_run(remeasured, root() / "reg-like");
    QCOMPARE(diff.entries.front().compared, std::string("re-measure medians"));
  }
};

QTEST_GUILESS_MAIN(TestOneWinner)
#include "test_one_winner.moc"
