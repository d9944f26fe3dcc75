// The registry reader (tuned_data/<backend>/<device>.json): parse, read every entry, and write
// back what was read.
#include "fuzz_input.h"
#include "ktune/json_read.h"
#include "ktune/registry.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ktune::fuzz::expect_input_errors([&] {
    const ktune::Registry reg = ktune::Registry::from_json(ktune::parse_json(ktune::fuzz::text(data, size), "fuzz"));
    (void)reg.to_json().dump();
  });
  return 0;
}
