#pragma once
// The CUDA grouped_gemm configs the spec test builds and the GPU test validates: every value of
// every parameter, and each fusion choice with each warp count (the loaders and stores differ)
// and with persistent blocks or not, in each kernel (WGMMA 0 and 1, where the space holds both);
// ping-pong consumers with each way of feeding and each tile height (one or two boxes a consumer);
// clusters with each way of feeding and each tile width (one or two parts of B a block).
#include <set>
#include <string>
#include <vector>

#include "ktune/search_space.h"

namespace ktune_test {

inline std::vector<ktune::Config> grouped_covering(const std::vector<ktune::Config>& valid) {
  std::set<std::string> covered;
  std::vector<ktune::Config> chosen;
  auto v = [](const ktune::Config& c, const char* name) { return std::to_string(c.get(name)); };
  for (const ktune::Config& c : valid) {
    const std::string kernel = "G" + std::to_string(c.get_or("WGMMA", 0));
    bool adds =
        covered.insert(kernel + "X" + v(c, "permute_x") + "Y" + v(c, "permute_y") + "W" + v(c, "num_warps")).second;
    for (const char* name : {"BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "num_stages"})
      adds |= covered.insert(kernel + name + "=" + v(c, name)).second;
    // Persistent blocks with each way of feeding the Hopper kernel (gathered or by TMA).
    adds |= covered
                .insert(kernel + "P" + std::to_string(c.get_or("PERSISTENT", 0)) + "X" + v(c, "permute_x") + "Y" +
                        v(c, "permute_y"))
                .second;
    if (c.get_or("PINGPONG", 0))
      adds |= covered.insert(kernel + "Q" + v(c, "BLOCK_SIZE_M") + "X" + v(c, "permute_x") + "Y" + v(c, "permute_y"))
                  .second;
    if (c.get_or("CLUSTER", 1) > 1)
      adds |= covered.insert(kernel + "C" + v(c, "BLOCK_SIZE_N") + "X" + v(c, "permute_x") + "Y" + v(c, "permute_y"))
                  .second;
    if (adds) chosen.push_back(c);
  }
  return chosen;
}

}  // namespace ktune_test
