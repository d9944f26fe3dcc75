// The run metadata reader (tuning_runs/<run>/run_metadata.json): parse, read, write back.
#include "fuzz_input.h"
#include "ktune/json_read.h"
#include "ktune/run_store.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ktune::fuzz::expect_input_errors([&] {
    const ktune::RunMetadata m =
        ktune::RunMetadata::from_json(ktune::parse_json(ktune::fuzz::text(data, size), "fuzz"));
    (void)m.to_json().dump();
  });
  return 0;
}
