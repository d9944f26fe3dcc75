// The worker protocol: messages round trip, string parameters travel as strings, other versions
// and malformed lines are clear errors, and the built-in server (what `ktune worker` runs)
// answers prepares and measures of the CPU backend by id.
#include <fcntl.h>
#include <unistd.h>

#include <QDir>
#include <QElapsedTimer>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <thread>

#include "ktune/backends.h"
#include "ktune/error.h"
#include "ktune/registry.h"
#include "ktune/worker_client.h"
#include "ktune/worker_protocol.h"
#include "ktune/worker_server.h"

using namespace ktune;
using namespace ktune::worker;
using json = nlohmann::json;

namespace {

KernelFamily toyFamily() {
  KernelFamily f;
  f.name = "toy";
  f.backend = "python";
  f.key_fields = {{"M", true, "", {}, "rows"}, {"dtype", false, "f32", {"f32", "f16"}, ""}};
  f.bucket_field = "M";
  f.flops_expr = "2*M";
  f.default_space = SearchSpace({{"BLOCK", {16, 32}, ""}, {"order", {"row", "col"}, ""}, {"fused", {true, false}, ""}},
                                {{"BLOCK <= M", ""}});
  f.default_config = Config({{"BLOCK", 16}, {"order", "col"}, {"fused", false}});
  return f;
}

// Runs serve() on the CPU backend over pipes with `input` lines; returns the lines it wrote.
std::vector<json> serveLines(const std::vector<json>& input, int* code = nullptr) {
  auto backends = make_backends();
  int in[2], out[2];
  if (pipe(in) != 0 || pipe(out) != 0) return {};
  std::string text;
  for (const auto& m : input) text += to_line(m);
  std::thread feeder([&] {
    (void)!write(in[1], text.data(), text.size());
    close(in[1]);
  });
  std::string all;  // read while the server writes, so a full pipe cannot stall it
  std::thread drain([&] {
    char buf[4096];
    for (ssize_t n; (n = read(out[0], buf, sizeof buf)) > 0;) all.append(buf, static_cast<std::size_t>(n));
  });
  const int rc = serve(find_backend(backends, "cpu"), {}, in[0], out[1]);
  if (code) *code = rc;
  feeder.join();
  close(out[1]);
  drain.join();
  close(in[0]);
  close(out[0]);
  std::vector<json> lines;
  std::size_t start = 0, nl;
  while ((nl = all.find('\n', start)) != std::string::npos) {
    lines.push_back(parse_line(all.substr(start, nl - start)));
    start = nl + 1;
  }
  return lines;
}

// Attention as a worker offers it: heads divided together, and the GQA rule.
KernelFamily headsFamily() {
  KernelFamily f;
  f.name = "attn";
  f.backend = "triton";
  f.key_fields = {{"H", true, "", {}, ""}, {"KVH", true, "", {}, ""}, {"D", true, "128", {}, ""}};
  f.tp_splits = {{TpSplitDim::Heads, {{"H"}, {"KVH", true}}}, {TpSplitDim::Out, {{"D"}}}};
  f.shape_rules = {{"mod(H, KVH) == 0", "H must be a multiple of KVH"}};
  f.default_space = SearchSpace({{"BLOCK", {16, 32}, ""}}, {});
  f.default_config = Config({{"BLOCK", 16}});
  return f;
}

// The ProtocolError a hello whose family is `family` gets, "" when it is read.
std::string helloError(const json& family) {
  Hello h;
  h.backend = "triton";
  DeviceInfo d;
  d.backend = "triton";
  d.name = "GPU";
  h.devices = {d};
  json wire = to_json(h);
  wire["families"] = json::array({family});
  try {
    hello_from_json(wire);
    return "";
  } catch (const ProtocolError& e) {
    return e.what();
  }
}

// `wire` with its `field` set to `value` is a ProtocolError whose message holds `message`.
void refused(json wire, const char* field, const json& value, const char* message) {
  wire[field] = value;
  try {
    reply_from_json(wire);
    QFAIL(qPrintable(QString("%1 %2 was accepted").arg(field, QString::fromStdString(value.dump()))));
  } catch (const ProtocolError& e) {
    QVERIFY2(std::string(e.what()).find(message) != std::string::npos, e.what());
  }
}

}  // namespace

class TestWorkerProtocol : public QObject {
  Q_OBJECT
 private slots:
  void helloRoundTripsWithStringParameters() {
    Hello h;
    h.worker = "toy.py";
    h.backend = "python";
    DeviceInfo d;
    d.backend = "python";
    d.name = "Toy CPU";
    d.properties["cores"] = 2;
    h.devices = {d};
    h.families = {{toyFamily(), true}};
    const json wire = to_json(h);
    // On the wire the string parameter is its strings.
    QCOMPARE(wire["families"][0]["space"]["parameters"][1]["values"], json({"row", "col"}));
    QCOMPARE(wire["families"][0]["space"]["parameters"][2]["values"], json({true, false}));
    QCOMPARE(wire["families"][0]["default_config"]["order"], json("col"));
    QCOMPARE(wire["families"][0]["default_config"]["fused"], json(false));
    const Hello back = hello_from_json(parse_line(to_line(wire)));
    QCOMPARE(back.backend, std::string("python"));
    QCOMPARE(back.devices.at(0).name, std::string("Toy CPU"));
    const OfferedFamily& f = back.families.at(0);
    QCOMPARE(f.family.name, std::string("toy"));
    QCOMPARE(f.family.key_fields.size(), std::size_t(2));
    QCOMPARE(f.family.key_fields[1].choices, (std::vector<std::string>{"f32", "f16"}));
    QCOMPARE(f.family.default_space.parameters().at(1).values, (std::vector<ParamValue>{"row", "col"}));
    QCOMPARE(f.family.default_space.parameters().at(2).kind(), ParamValue::Kind::Bool);
    QCOMPARE(f.family.default_space.constraints().at(0).expr, std::string("BLOCK <= M"));
    // JSON objects do not keep the order; the space restores it.
    QCOMPARE(in_space_order(f.family.default_config, f.family.default_space), toyFamily().default_config);
  }

  // Splits and shape rules travel with the kernel spec's names and forms, and read back whole.
  void helloCarriesTensorParallelSplitsAndShapeRules() {
    const json wire = family_to_json(headsFamily());
    QCOMPARE(wire["tp_head_fields"], json::parse(R"(["H", {"name": "KVH", "at_least_one": true}])"));
    QCOMPARE(wire["tp_out_field"], json("D"));
    QVERIFY(!wire.contains("tp_in_field"));
    QCOMPARE(wire["shape_rules"],
             json::parse(R"([{"expr": "mod(H, KVH) == 0", "description": "H must be a multiple of KVH"}])"));
    const KernelFamily back = family_from_json(json::parse(wire.dump()), "triton").family;
    QCOMPARE(back.tp_splits.size(), std::size_t(2));
    const TpSplit& heads = back.resolve_tp_split(TpSplitDim::Heads);
    QCOMPARE(heads.fields.size(), std::size_t(2));
    QCOMPARE(heads.fields[0].name, std::string("H"));
    QVERIFY(!heads.fields[0].at_least_one);
    QCOMPARE(heads.fields[1].name, std::string("KVH"));
    QVERIFY(heads.fields[1].at_least_one);
    QCOMPARE(back.resolve_tp_split(TpSplitDim::Out).fields.at(0).name, std::string("D"));
    QCOMPARE(back.shape_rules, headsFamily().shape_rules);
    // An older worker's family, without them: read as before, and written without them.
    const KernelFamily plain = family_from_json(family_to_json(toyFamily()), "python").family;
    QVERIFY(plain.tp_splits.empty() && plain.shape_rules.empty());
    for (const char* key : {"tp_out_field", "tp_in_field", "tp_head_fields", "shape_rules"})
      QVERIFY2(!family_to_json(toyFamily()).contains(key), key);
  }

  // An isolated run takes its family from the measuring child: the spec's launch limits must make the
  // trip, or a --space file that copied the spec's constraints launches configs the device cannot run
  // (an H100 paged_attention run launched 552 of 1,296 configs into too much shared memory).
  void launchLimitsSurviveTheHelloSoASpaceFileKeepsThem() {
    KernelFamily f = headsFamily();
    const Constraint limit{"BLOCK * 1024 <= smem_per_block_optin", "derived: shared memory"};
    f.launch_limits = {limit};
    const KernelFamily back = family_from_json(json::parse(family_to_json(f).dump()), "cuda").family;
    QCOMPARE(back.launch_limits, f.launch_limits);
    const SearchSpace file({{"BLOCK", {16, 32, 512}, ""}}, {});
    const SearchSpace space = back.user_space(file);
    QCOMPARE(space.constraints().size(), std::size_t(1));
    const Variables ctx{{"H", 32}, {"KVH", 8}, {"D", 128}, {"smem_per_block_optin", 232448}};
    QCOMPARE(space.enumerate(ctx).size(), std::size_t(2));
    // A family without limits writes none.
    QVERIFY(!family_to_json(headsFamily()).contains("launch_limits"));
    json bad = family_to_json(f);
    bad["launch_limits"] = "BLOCK < 4";
    QVERIFY(helloError(bad).find("hello.families.attn.launch_limits: expected an array") != std::string::npos);
    bad["launch_limits"] = json::array({"BLOCK <"});
    QVERIFY(helloError(bad).find("hello.families.attn.launch_limits: constraint #1") != std::string::npos);
  }

  void malformedSplitsAndRulesAreProtocolErrorsNamingThePath_data() {
    QTest::addColumn<QString>("key");
    QTest::addColumn<QString>("value");
    QTest::addColumn<QString>("error");
    QTest::newRow("head field unknown") << "tp_head_fields"
                                        << R"(["H", {"name": "Q"}])"
                                        << "hello.families.attn.tp_head_fields[1]: 'Q' must be a numeric key field";
    QTest::newRow("head field a number") << "tp_head_fields"
                                         << "[3]"
                                         << "hello.families.attn.tp_head_fields[0]: expected a key field's name";
    QTest::newRow("at_least_one not a boolean")
        << "tp_head_fields"
        << R"([{"name": "KVH", "at_least_one": "yes"}])"
        << "hello.families.attn.tp_head_fields[0].at_least_one: expected true or false";
    QTest::newRow("heads not a list") << "tp_head_fields"
                                      << R"("H")"
                                      << "hello.families.attn.tp_head_fields: expected an array";
    QTest::newRow("out field unknown") << "tp_out_field"
                                       << R"("N")"
                                       << "hello.families.attn.tp_out_field: 'N' is not one of the key fields";
    QTest::newRow("in field text") << "tp_in_field"
                                   << R"("dtype")"
                                   << "hello.families.attn.tp_in_field: 'dtype' must be a numeric key field";
    QTest::newRow("rule without expr") << "shape_rules"
                                       << R"([{"description": "x"}])"
                                       << "hello.families.attn.shape_rules[0]: missing field \"expr\"";
    QTest::newRow("rule over no key field") << "shape_rules"
                                            << R"([{"expr": "H > 1"}, {"expr": "mod(H, Z) == 0"}])"
                                            << "hello.families.attn.shape_rules[1].expr: 'Z' is not a key field";
    QTest::newRow("rule that does not parse") << "shape_rules"
                                              << R"([{"expr": "H >"}])"
                                              << "hello.families.attn.shape_rules[0].expr: ";
  }
  void malformedSplitsAndRulesAreProtocolErrorsNamingThePath() {
    QFETCH(QString, key);
    QFETCH(QString, value);
    QFETCH(QString, error);
    json family = family_to_json(headsFamily());
    family["key_fields"].push_back({{"name", "dtype"}, {"numeric", false}});
    family[key.toStdString()] = json::parse(value.toStdString());
    const std::string err = helloError(family);
    QVERIFY2(err.find(error.toStdString()) != std::string::npos, err.c_str());
  }

  void requestsRoundTrip() {
    Request r;
    r.type = "measure";
    r.id = 42;
    r.family = "toy";
    r.problem = Problem::from_key("toy", "M=64,dtype=f16");
    r.config = Config({{"BLOCK", 32}, {"order", "row"}, {"fused", true}});
    r.seed = 9;
    r.tolerance = {1e-3, 2e-3, 0.01};
    r.settings.noise_target = 0.05;
    r.best_median_ns = 1234.5;
    const json wire = to_json(r);
    QCOMPARE(wire["config"]["order"], json("row"));
    QCOMPARE(wire["config"]["fused"], json(true));
    QCOMPARE(wire["problem"]["fields"]["M"], json(64));
    const Request back = request_from_json(parse_line(to_line(wire)));
    QCOMPARE(back.id, std::int64_t(42));
    QCOMPARE(back.problem, r.problem);
    QCOMPARE(back.config.key(), std::string("BLOCK=32,fused=true,order=row"));
    QCOMPARE(back.seed, std::uint64_t(9));
    QCOMPARE(back.tolerance.rtol, 2e-3);
    QCOMPARE(back.settings.noise_target, 0.05);
    QCOMPARE(*back.best_median_ns, 1234.5);
  }

  void repliesRoundTrip() {
    Measured m;
    m.validation = {0.25, 0.5};
    m.outcome.status = TrialStatus::SlowAbort;
    m.outcome.note = "slow";
    m.outcome.samples_ns = {10, 11, 12};
    const Reply r = reply_from_json(measured_reply(7, m, 0.5));
    QCOMPARE(r.id, std::int64_t(7));
    QCOMPARE(r.status, TrialStatus::SlowAbort);
    QCOMPARE(r.samples_ns, (std::vector<double>{10, 11, 12}));
    QCOMPARE(r.validation.mismatch_fraction, 0.5);
    QCOMPARE(r.compile_time_s, 0.5);
    const Reply f = reply_from_json(failed_reply(8, TrialStatus::WrongResult, "max abs error 3"));
    QCOMPARE(f.status, TrialStatus::WrongResult);
    QCOMPARE(f.message, std::string("max abs error 3"));
    // An output that held NaN has no finite error: JSON writers spell it null, read as infinity.
    m.validation.max_abs_error = std::nan("");
    QVERIFY(std::isinf(reply_from_json(parse_line(to_line(measured_reply(9, m, 0.5)))).validation.max_abs_error));
    json word = measured_reply(10, m, 0.5);
    word["validation"]["mismatch_fraction"] = "none";
    QVERIFY_THROWS_EXCEPTION(ProtocolError, reply_from_json(word));
  }

  // A worker's own numbers (a speedup over its baseline) travel by name; a value that is no finite
  // number, a nameless one and "device" (ktune's: which device measured) are refused, naming the metric.
  void measuredMetricsRoundTripAndAreChecked() {
    Measured m;
    m.outcome.samples_ns = {10, 11};
    QVERIFY(!measured_reply(1, m, 0.1).contains("metrics"));  // none: the answer says nothing of them
    m.metrics = {{"speedup_vs_torch", 1.25}, {"torch_us", 1508.5}};
    QCOMPARE(reply_from_json(parse_line(to_line(measured_reply(2, m, 0.1)))).metrics, m.metrics);
    const std::pair<json, const char*> bad[] = {
        {json{{"speedup", "fast"}}, "measured.metrics.speedup: not a finite number"},
        {json{{"speedup", nullptr}}, "measured.metrics.speedup: not a finite number"},
        {json{{"device", 1}}, "measured.metrics.device: the name is ktune's"},
        {json{{"", 1}}, "measured.metrics: a metric needs a name"},
        {json::array({1.5}), "measured.metrics: not an object"},
    };
    for (const auto& [metrics, message] : bad) refused(measured_reply(3, m, 0.1), "metrics", metrics, message);
  }

  // A sample's answer may say what the device was doing (its clock, power and limits): those
  // names only, each a non-negative number, the share of limited readings at most 1.
  void sampledConditionsRoundTripAndAreChecked() {
    QVERIFY(!sampled_reply(1, 10.0).contains("conditions"));
    const Conditions c{{kSmClockMhz, 1425}, {kPowerW, 690.5}, {kClockLimited, 1}};
    const Reply r = reply_from_json(parse_line(to_line(sampled_reply(2, 10.0, c))));
    QCOMPARE(r.ns, 10.0);
    QCOMPARE(r.conditions, c);
    const std::pair<json, const char*> bad[] = {
        {json{{"temperature_c", 60}}, "sampled.conditions.temperature_c: not a condition ktune reads"},
        {json{{kSmClockMhz, -1}}, "sampled.conditions.sm_clock_mhz: not a non-negative number"},
        {json{{kPowerW, "hot"}}, "sampled.conditions.power_w: not a non-negative number"},
        {json{{kClockLimited, 2}}, "sampled.conditions.clock_limited: not a share from 0 to 1"},
        {json::array({1.5}), "sampled.conditions: not an object"},
    };
    for (const auto& [conditions, message] : bad) refused(sampled_reply(3, 10.0), "conditions", conditions, message);
  }

  // The schema (docs/worker-protocol.schema.json) and the code agree: a measured answer is ok,
  // timeout or slow_abort; a failed config is `failed`, and nothing ktune ignores goes on the wire.
  void measuredCarriesOnlyStatusesWithSamples() {
    Measured m;
    m.outcome.samples_ns = {10, 11};
    for (const char* status : {"wrong_result", "crashed", "compile_error", "launch_error"}) {
      json wire = measured_reply(3, m, 0.1);
      wire["status"] = status;
      try {
        reply_from_json(wire);
        QFAIL(qPrintable(QString("measured.status %1 was accepted").arg(status)));
      } catch (const ProtocolError& e) {
        QVERIFY2(std::string(e.what()).find("'failed' answer") != std::string::npos, e.what());
      }
    }
    json wire = measured_reply(3, m, 0.1);
    wire["status"] = 7;
    QVERIFY_THROWS_EXCEPTION(ProtocolError, reply_from_json(wire));
    wire.erase("status");  // absent: ok
    QCOMPARE(reply_from_json(wire).status, TrialStatus::Ok);
  }

  void helloSendsNoSlug() {
    Hello h;
    h.backend = "cpu";
    DeviceInfo d;
    d.backend = "cpu";
    d.name = "AMD EPYC 7B13";
    h.devices = {d};
    const json wire = to_json(h);
    QVERIFY2(!wire["devices"][0].contains("slug"), wire.dump().c_str());
    QCOMPARE(hello_from_json(wire).devices.at(0).slug(), std::string("amd-epyc-7b13"));
  }

  // A worker that never says hello is given up on with the limit said as a person would, and
  // what it wrote to stderr.
  void silentWorkerIsGivenUpOnNamingTheLimit() {
    WorkerOptions o;
    o.argv = {"/bin/sh", "-c", "echo warming up >&2; exec sleep 60"};
    o.hello_timeout_s = 2;
    QElapsedTimer clock;
    clock.start();
    try {
      WorkerBackend backend(o);
      QFAIL("a worker that said nothing was accepted");
    } catch (const RunError& e) {
      const std::string m = e.what();
      QVERIFY2(m.find("sent no hello within 2 s (") != std::string::npos, e.what());
      QVERIFY2(m.find("; stderr: warming up") != std::string::npos, e.what());
    }
    QVERIFY(clock.elapsed() < 30000);
  }

  // A worker starts in the folder it is given (a recorded run's), not in ktune's; a folder that is
  // gone is named before anything starts.
  void workerStartsInItsFolder() {
    QTemporaryDir tmp;
    const std::string folder = QDir(tmp.path()).canonicalPath().toStdString();
    WorkerOptions o;
    o.argv = {"/bin/sh", "-c", "echo in \"$(pwd -P)\" >&2"};
    o.working_directory = folder;
    try {
      WorkerBackend backend(o);
      QFAIL("a command that is no worker was accepted");
    } catch (const RunError& e) {
      QVERIFY2(std::string(e.what()).find("stderr: in " + folder) != std::string::npos, e.what());
    }
    o.working_directory = folder + "/gone";
    try {
      WorkerBackend backend(o);
      QFAIL("a worker started in a folder that does not exist");
    } catch (const RunError& e) {
      QVERIFY2(std::string(e.what()).find(folder + "/gone, does not exist") != std::string::npos, e.what());
    }
  }

  void otherVersionsAndBadLinesAreClearErrors() {
    json old = to_json(Hello{2, "w", "cpu", {}, {}, {}});
    QVERIFY_THROWS_EXCEPTION(ProtocolError, hello_from_json(old));
    try {
      check_client_hello({{"type", "hello"}, {"protocol", 3}});
      QFAIL("no error");
    } catch (const ProtocolError& e) {
      QVERIFY2(std::string(e.what()).find("protocol 3") != std::string::npos, e.what());
    }
    QVERIFY_THROWS_EXCEPTION(ProtocolError, parse_line("not json"));
    QVERIFY_THROWS_EXCEPTION(ProtocolError, parse_line("[1, 2]"));
    QVERIFY_THROWS_EXCEPTION(ProtocolError, parse_line("{\"id\": 1}"));
    QVERIFY_THROWS_EXCEPTION(ProtocolError, parse_line(std::string(100000, '[') + std::string(100000, ']')));
    QVERIFY_THROWS_EXCEPTION(ProtocolError, reply_from_json({{"type", "surprise"}, {"id", 1}}));
    QVERIFY_THROWS_EXCEPTION(ProtocolError, request_from_json({{"type", "launch"}, {"id", 1}}));
    QVERIFY_THROWS_EXCEPTION(ProtocolError, config_from_wire({{"order", 1.5}}));
    QVERIFY_THROWS_EXCEPTION(ProtocolError, config_from_wire({{"order", "a,b"}}));
  }

  void builtInServerAnswersById() {
    Problem p = Problem::from_key("gemm", "M=16,N=32,K=32,dtype=f32");
    Request prep;
    prep.type = "prepare";
    prep.family = "gemm";
    prep.problem = p;
    // Portable vectors: the default config needs AVX2, which not every x86 host has.
    prep.config = Config(
        {{"MR", 4}, {"NR", 8}, {"vec", 4}, {"MC", 64}, {"KC", 128}, {"NC", 1024}, {"loop_order", 0}, {"threads", 1}});
    Request meas = prep;
    meas.type = "measure";
    meas.settings.warmup_ms = 1;
    meas.settings.max_ms_per_config = 2000;  // generous: a loaded machine must not time the config out
    std::vector<json> in{client_hello()};
    for (int id : {1, 2}) {
      prep.id = id;
      in.push_back(to_json(prep));
    }
    meas.id = 3;
    in.push_back(to_json(meas));
    Request samp = prep;
    samp.type = "sample";
    samp.id = 6;
    samp.launches = 3;
    samp.timeout_ms = 1000;
    in.push_back(to_json(samp));
    Request base = prep;
    base.id = 7;
    base.baseline = true;
    in.push_back(to_json(base));
    in.push_back({{"type", "launch"}, {"id", 4}});
    in.push_back({{"type", "shutdown"}, {"id", 8}});
    int code = -1;
    const auto out = serveLines(in, &code);
    QCOMPARE(code, 0);
    QVERIFY(out.size() >= 5);
    const Hello h = hello_from_json(out.front());
    QCOMPARE(h.backend, std::string("cpu"));
    QCOMPARE(h.devices.size(), std::size_t(1));
    std::map<std::int64_t, json> by_id;
    for (std::size_t i = 1; i < out.size(); ++i) by_id[out[i]["id"].get<std::int64_t>()] = out[i];
    QCOMPARE(by_id[1]["type"], json("prepared"));
    QCOMPARE(by_id[2]["type"], json("prepared"));
    const Reply m = reply_from_json(by_id[3]);
    QCOMPARE(m.status, TrialStatus::Ok);
    QVERIFY(m.samples_ns.size() >= 5);
    QVERIFY(m.samples_ns.front() > 0);
    QCOMPARE(by_id[4]["type"], json("error"));
    QVERIFY(by_id[4]["message"].get<std::string>().find("unknown message type 'launch'") != std::string::npos);
    const Reply sampled = reply_from_json(by_id[6]);  // one timed sample, as a paired measurement asks
    QVERIFY(sampled.ns > 0);
    QCOMPARE(reply_from_json(by_id[7]).status, TrialStatus::LaunchError);  // the CPU backend has no baseline
    QCOMPARE(out.back()["type"], json("bye"));                             // after the measures and samples before it
  }

  // What `ktune worker` offers is the built-in family whole: --tp-size works through it.
  void builtInServerOffersItsFamiliesSplits() {
    const auto out = serveLines({client_hello(), {{"type", "shutdown"}, {"id", 1}}});
    QVERIFY(!out.empty());
    std::map<std::string, KernelFamily> offered;
    for (const auto& f : hello_from_json(out.front()).families) offered[f.family.name] = f.family;
    QCOMPARE(offered.at("gemm").resolve_tp_split(TpSplitDim::Out).fields.at(0).name, std::string("N"));
    QCOMPARE(offered.at("gemm").resolve_tp_split(TpSplitDim::In).fields.at(0).name, std::string("K"));
    const KernelFamily& attention = offered.at("paged_attention");
    QCOMPARE(attention.resolve_tp_split(TpSplitDim::None).fields.size(), std::size_t(2));
    QVERIFY(attention.resolve_tp_split(TpSplitDim::None).fields[1].at_least_one);
    QCOMPARE(attention.shape_rules.at(0).expr, std::string("mod(num_q_heads, num_kv_heads) == 0"));
  }
};

QTEST_GUILESS_MAIN(TestWorkerProtocol)
#include "test_worker_protocol.moc"
