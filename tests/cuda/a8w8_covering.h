#pragma once
// The CUDA gemm_a8w8_blockscale configs the spec test builds and the GPU test validates: every
// tile shape (the consumer count, the chunking of 256-column tiles) with and without overlapped
// partial sums and a persistent grid (whole tiles, or the last wave's split along K) with and without clusters, every
// ring depth, every promotion depth (how long the tensor cores sum in reduced precision: the accuracy at stake) and
// every split-K the shape allows, each with and without overlap (which changes how runs and K blocks interleave); for
// int8, also every warp grid and warp tile shape (the MMA tiles a warp holds).
#include <set>
#include <string>
#include <vector>

#include "ktune/search_space.h"

namespace ktune_test {

// "name=value" of parameter `name` in `c`.
inline std::string a8w8_tag(const char* name, const ktune::Config& c) {
  std::string tag = name;
  tag += '=';
  tag += std::to_string(c.get(name));
  return tag;
}

inline std::vector<ktune::Config> a8w8_covering(const std::vector<ktune::Config>& valid) {
  std::set<std::string> covered;
  std::vector<ktune::Config> chosen;
  for (const ktune::Config& c : valid) {
    const std::string tile = a8w8_tag("BLOCK_M", c) + a8w8_tag("BLOCK_N", c);
    const bool tiles = covered.insert(tile + a8w8_tag("OVERLAP", c)).second;
    // Clusters change what a block loads and where it stores: every tile, persistent or not.
    const bool persistent = covered.insert(tile + a8w8_tag("PERSISTENT", c) + a8w8_tag("CLUSTER", c)).second;
    const bool stages = covered.insert(a8w8_tag("num_stages", c)).second;
    const bool promote = covered.insert(a8w8_tag("PROMOTE_K", c) + a8w8_tag("OVERLAP", c)).second;
    const bool split = covered.insert(a8w8_tag("SPLITK", c) + a8w8_tag("OVERLAP", c)).second;
    // PERSISTENT 2 splits the last wave's tiles: every split, as a ragged or empty slice sums, and
    // for 192-column tiles (a slice's share of their float4 columns is not a power of two).
    const bool tail_split = covered
                                .insert(a8w8_tag("PERSISTENT", c) + a8w8_tag("SPLITK", c) + a8w8_tag("CLUSTER", c) +
                                        (c.get("BLOCK_N") == 192 ? "192" : ""))
                                .second;
    // int8's warp grids and the warp tiles they cut (fp8's keep one value).
    const bool warps = covered.insert(a8w8_tag("WARPS_M", c) + a8w8_tag("WARPS_N", c)).second;
    const bool warp_tile = covered
                               .insert("warp tile " + std::to_string(c.get("BLOCK_M") / c.get("WARPS_M")) + "x" +
                                       std::to_string(c.get("BLOCK_N") / c.get("WARPS_N")))
                               .second;
    if (tiles || persistent || stages || promote || split || tail_split || warps || warp_tile) chosen.push_back(c);
  }
  return chosen;
}

}  // namespace ktune_test
