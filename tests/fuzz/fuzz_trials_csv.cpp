// The trials.csv reader, through the file a resume or an export reads (its CSV parser, header
// check, torn-row handling and per-column parsing).
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "fuzz_input.h"
#include "ktune/run_store.h"

namespace {

const std::filesystem::path& run_dir() {
  static const std::filesystem::path dir = [] {
    std::string tmpl = (std::filesystem::temp_directory_path() / "ktune_fuzz_trials.XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) std::abort();
    return std::filesystem::path(tmpl);
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  {
    std::ofstream out(run_dir() / "trials.csv", std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  ktune::fuzz::expect_input_errors([&] { (void)ktune::RunStore::read_trials(run_dir()); });
  return 0;
}
