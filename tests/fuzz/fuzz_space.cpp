// The search space reader (--space FILE, a spec's "space"), then its constraints evaluated
// over the whole space when it is small enough to walk quickly.
#include "fuzz_input.h"
#include "ktune/json_read.h"
#include "ktune/search_space.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ktune::fuzz::expect_input_errors([&] {
    const ktune::SearchSpace s =
        ktune::SearchSpace::from_json(ktune::parse_json(ktune::fuzz::text(data, size), "fuzz"));
    (void)s.to_json().dump();
    if (s.total_size() <= 4096) (void)s.prune_report({{"M", 64}, {"N", 128}, {"K", 256}});
  });
  return 0;
}
