// An input's contents from a file a user computed (pnpoly's slopes, from its polygon), checked
// without a GPU: a .npy file (versions 1 and 2, numpy's header as np.save writes it) or raw
// binary with a dtype is what the session uploads; a wrong dtype, count, byte order or Fortran
// order is refused naming the file and what the argument expects; the path is confined to the
// spec's folder as "source" is; a built-in spec has no folder to read from.
#include <QTemporaryDir>
#include <QtTest>
#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

#include "ktune/array_file.h"
#include "ktune/backends/cuda_spec.h"
#include "ktune/host_data.h"
#include "ktune/kernel_spec.h"
#include "ktune/spec_inputs.h"
#include "store_test_support.h"

using namespace ktune;
namespace fs = std::filesystem;

namespace {

// A .npy file as np.save writes it: magic, version, header length, a padded dict ending in '\n'.
std::string npy(const std::string& descr, const std::string& shape, const std::string& data, bool fortran = false,
                int major = 1) {
  std::string dict =
      "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") + ", 'shape': " + shape + ", }";
  const std::size_t prefix = 8 + (major == 1 ? 2 : 4);
  while ((prefix + dict.size() + 1) % 64 != 0) dict += ' ';
  dict += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  for (std::size_t i = 0; i < (major == 1 ? 2u : 4u); ++i) out += static_cast<char>((dict.size() >> (8 * i)) & 0xff);
  return out + dict + data;
}

std::string floats(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

void write(const fs::path& file, const std::string& bytes) { std::ofstream(file, std::ios::binary) << bytes; }

nlohmann::json pnpoly_spec(const nlohmann::json& init) {
  auto j = nlohmann::json::parse(R"json({
    "name": "pnpoly", "source": "k.cu",
    "key_fields": [{"name": "n", "default": 1000}, {"name": "vertices", "default": 3}],
    "space": {"parameters": {"block_size_x": [32, 64]}},
    "arguments": [{"name": "bitmap", "buffer": "i32", "count": "n", "role": "output"},
                  {"name": "slopes", "buffer": "f32", "count": "vertices"}],
    "launches": [{"entry": "pnpoly", "grid": ["ceil_div(n, block_size_x)"], "block": ["block_size_x"],
                  "args": ["bitmap", "slopes"]}]
  })json");
  j["arguments"][1]["init"] = init;
  return j;
}

Problem problem(int vertices) {
  Problem p;
  p.family = "pnpoly";
  p.fields = {{"n", "1000"}, {"vertices", std::to_string(vertices)}};
  return p;
}

}  // namespace

class TestSpecFileInput : public QObject {
  Q_OBJECT

  QTemporaryDir tmp_;
  fs::path dir() const { return fs::path(tmp_.path().toStdString()) / "spec"; }

  // Writes the spec beside its kernel and loads it; the InputError's message, or "".
  std::string load(const nlohmann::json& init, KernelSpec* out = nullptr) {
    std::ofstream(dir() / "pnpoly.json") << pnpoly_spec(init).dump();
    return input_error_of([&] {
      KernelSpec s = KernelSpec::load(dir() / "pnpoly.json", cuda_spec_dialect());
      if (out) *out = std::move(s);
    });
  }

  std::vector<float> uploaded(const nlohmann::json& init, int vertices = 3) {
    KernelSpec s;
    const std::string e = load(init, &s);
    if (!e.empty()) qFatal("%s", e.c_str());
    const HostInput in = generate_spec_inputs(s, problem(vertices), {}, 1).inputs.at("slopes");
    std::vector<float> v(in.data.size() / 4);
    std::memcpy(v.data(), in.data.data(), in.data.size());
    return v;
  }

 private slots:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    fs::create_directories(dir());
    std::ofstream(dir() / "k.cu") << "// the kernel\n";
    write(dir() / "slopes.npy", npy("<f4", "(3,)", floats({0.5f, -2.f, 8.f})));
    write(dir() / "slopes_v2.npy", npy("<f4", "(1, 3)", floats({1.f, 2.f, 3.f}), false, 2));
    write(dir() / "slopes.bin", floats({4.f, 5.f, 6.f}));
    write(dir() / "slopes_f8.npy", npy("<f8", "(3,)", std::string(24, '\0')));
    write(dir() / "slopes_be.npy", npy(">f4", "(3,)", std::string(12, '\0')));
    write(dir() / "slopes_fortran.npy", npy("<f4", "(3, 2)", std::string(24, '\0'), true));
    write(dir() / "not.npy", "P5 not numpy");
    write(fs::path(tmp_.path().toStdString()) / "outside.npy", npy("<f4", "(3,)", floats({1, 2, 3})));
  }

  void npyIsUploaded() {
    QCOMPARE(uploaded({{"file", "slopes.npy"}}), (std::vector<float>{0.5f, -2.f, 8.f}));
    QCOMPARE(uploaded({{"file", "slopes_v2.npy"}}), (std::vector<float>{1.f, 2.f, 3.f}));
    const NpyHeader h = read_npy_header(dir() / "slopes_v2.npy");
    QCOMPARE(h.shape, (std::vector<std::uint64_t>{1, 3}));
    QVERIFY(h.type == ElemType::F32 && !h.fortran_order && h.data_offset == 128);
  }

  void rawIsUploadedWithItsDtype() {
    QCOMPARE(uploaded({{"file", "slopes.bin"}, {"dtype", "f32"}}), (std::vector<float>{4.f, 5.f, 6.f}));
    QVERIFY(contains(load({{"file", "slopes.bin"}}), "is read as raw binary: say its element type"));
    QVERIFY(contains(load({{"file", "slopes.npy"}, {"dtype", "f32"}}), "a .npy file says its own dtype"));
  }

  void wrongContentsAreRefusedAtLoad() {
    QVERIFY(contains(load({{"file", "slopes_f8.npy"}}),
                     "slopes_f8.npy: holds f64 elements, the argument 'slopes' is f32: save it as f32"));
    QVERIFY(contains(load({{"file", "slopes_be.npy"}}), "dtype '>f4' is not one ktune reads"));
    QVERIFY(contains(load({{"file", "slopes_fortran.npy"}}), "is in Fortran order: save it in C order"));
    QVERIFY(contains(load({{"file", "not.npy"}}), "not.npy: is not a .npy file"));
    QVERIFY(contains(load({{"file", "missing.bin"}, {"dtype", "f32"}}),
                     "missing.bin: no such file: run the script that writes it first"));
    QVERIFY(contains(load({{"file", "slopes.bin"}, {"dtype", "f7"}}), "init.dtype"));
    QVERIFY(contains(load({{"file", "slopes.npy"}, {"shape", 3}}), "unknown key: expected \"file\" or \"dtype\""));
  }

  // The count is the problem's: checked when the inputs are made, naming the file and the count.
  void wrongCountIsRefusedPerProblem() {
    KernelSpec s;
    QCOMPARE(load({{"file", "slopes.npy"}}, &s), std::string());
    const std::string e = input_error_of([&] { generate_spec_inputs(s, problem(600), {}, 1); });
    QVERIFY2(contains(e, "argument 'slopes' (count \"vertices\" for ") &&
                 contains(e, "slopes.npy: holds 3 elements, the argument's count is 600 for this problem"),
             e.c_str());
    QCOMPARE(load({{"file", "slopes.bin"}, {"dtype", "f64"}}, &s), std::string());
    const std::string raw = input_error_of([&] { generate_spec_inputs(s, problem(3), {}, 1); });
    QVERIFY2(contains(raw, "slopes.bin: is read as f64 (\"dtype\"), the argument is f32"), raw.c_str());
    QCOMPARE(load({{"file", "slopes.bin"}, {"dtype", "f32"}}, &s), std::string());
    const std::string size = input_error_of([&] { generate_spec_inputs(s, problem(4), {}, 1); });
    QVERIFY2(contains(size, "has 12 bytes of data, the argument needs 16 (4 x f32)"), size.c_str());
  }

  void confinedToTheSpecsFolder() {
    const std::string e = load({{"file", "../outside.npy"}});
    QVERIFY2(contains(e, "resolves to") && contains(e, "outside the spec's folder") &&
                 contains(e, "--allow-source-outside-spec"),
             e.c_str());
    qputenv(kAllowSourceOutsideSpecEnv, "1");
    QCOMPARE(uploaded({{"file", "../outside.npy"}}), (std::vector<float>{1.f, 2.f, 3.f}));
    qunsetenv(kAllowSourceOutsideSpecEnv);
  }

  void refusedWhereItCannotApply() {
    static const std::map<std::string, std::string> files{{"k.cu", "// the kernel\n"}};
    const std::string embedded = input_error_of([&] {
      KernelSpec::from_json(pnpoly_spec({{"file", "slopes.npy"}}), ".", cuda_spec_dialect(), "builtin", &files);
    });
    QVERIFY2(contains(embedded, "a built-in spec has no folder to read \"slopes.npy\" from"), embedded.c_str());
    auto j = pnpoly_spec({{"uniform", {0, 1}}});
    j["arguments"][0]["init"] = {{"file", "slopes.npy"}};
    std::ofstream(dir() / "out.json") << j.dump();
    const std::string output = input_error_of([&] { KernelSpec::load(dir() / "out.json", cuda_spec_dialect()); });
    QVERIFY2(contains(output, "expected \"poison\""), output.c_str());
  }
};

QTEST_GUILESS_MAIN(TestSpecFileInput)
#include "test_spec_file_input.moc"
