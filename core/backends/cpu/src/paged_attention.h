#pragma once
// Paged attention, decode (one query token per sequence), f32, flash-decoding on the CPU.
//
// Layout (FlashInfer's "HND", vLLM's CPU backend): the K and V caches are pools of physical
// pages [num_pages, kv_heads, page_size, head_dim], so one kv head's rows of one page are a
// contiguous page_size x head_dim tile; page_table[b * max_pages + i] is the physical page of
// sequence b's i-th logical page. q and out are [batch, q_heads, head_dim]; q head g reads kv
// head g / (q_heads / kv_heads) (GQA).
//
// Work: a task is (sequence, kv head, split): the split-th range of `chunk_pages` pages of the
// sequence. A task walks its range `pages_per_block` pages at a time; each block is scored and
// accumulated for the group's q heads `q_per_block` at a time (each K/V row loaded once for all
// of them, the block staying in L2 for the next q heads), with the online softmax in f32.
// With `prefetch`, the next block's scattered pages are requested while a block computes.
// Sequences of several splits are combined afterwards by their log-sum-exp. Tasks go to threads
// through a shared counter, longest first, so ragged lengths balance.
#include <cstdint>
#include <vector>

#include "ktune/config.h"
#include "launch.h"
#include "thread_pool.h"
#include "ukernels.h"

namespace ktune::cpu {

struct PagedAttentionShape {
  long batch = 0, q_heads = 0, kv_heads = 0, head_dim = 0, page_size = 0;
  long max_pages = 0;  // page table columns: ceil(context / page_size)
  long group() const { return q_heads / kv_heads; }
};

struct PagedAttentionOperands {
  PagedAttentionShape shape;
  const float* q;
  const float* k;
  const float* v;
  const std::int32_t* page_table;  // [batch, max_pages]
  const std::int32_t* lengths;     // [batch], each in [1, max_pages * page_size]
  float* out;
};

struct PagedAttentionPlan {
  struct Task {
    std::int32_t seq, head, t0, t1;  // tokens [t0, t1) of sequence seq, kv head head
    std::int32_t slot;               // partial-result slot, -1: the task is the whole sequence
  };
  int pages_per_block = 1, q_per_block = 1, splits = 1, vec = 4, threads = 1;
  bool prefetch = false;                 // software-prefetch the next block's pages
  long chunk_pages = 1;                  // pages of one split
  std::vector<Task> tasks;               // longest first
  long partials = 0;                     // partial results to combine (tasks of split sequences)
  std::vector<std::int32_t> split_seqs;  // sequences with more than one split
  const UKernelSet* set = nullptr;
};

// The seeded workload: ragged lengths uniform in [1, context] with one sequence at context, the
// sequences' pages shuffled over one pool of exactly the pages they use, K and V uniform in
// [-1, 1], q uniform in [-7.5, 7.5] (scores of standard deviation 2.5: peaked, as trained
// attention is, so outputs are a few tokens' V rows, magnitudes near 0.3, rather than an average
// near 0, and a dropped token shows). The session and bench/cpu build the same from a seed, on
// every host: the lengths and the page table come from the generators of kernel specs
// (host_data.h), the values from ktune's counter-based draws, never from std:: distributions.
struct PagedAttentionWorkload {
  PagedAttentionShape shape;
  std::vector<std::int32_t> lengths, table;  // unused table entries name page 0
  AlignedBuffer<float> q, k, v;
  long pages = 0;
  long tokens() const;  // sum of the lengths: K/V bytes read = 8 * tokens * kv_heads * head_dim
  PagedAttentionOperands operands(float* out) const {
    return {shape, q.data(), k.data(), v.data(), table.data(), lengths.data(), out};
  }
};
PagedAttentionWorkload make_paged_attention_workload(const PagedAttentionShape& shape, long context,
                                                     std::uint64_t seed);

// Throws TrialFailure: CompileError for missing/unknown/impossible parameters (q_per_block not
// dividing the GQA group, no micro-kernel), LaunchError for more threads than the hardware has.
// The plan is bound to the problem's lengths (planning is the CPU's "compile").
PagedAttentionPlan plan_paged_attention(const Config& config, int hw_threads, const PagedAttentionShape& shape,
                                        const std::vector<std::int32_t>& lengths);

// Scratch a launch needs; owned by the session so launches allocate nothing.
struct PagedAttentionWorkspace {
  AlignedBuffer<float> partial;                  // per slot: group x (head_dim + 2): o, m, l
  std::vector<AlignedBuffer<float>> per_thread;  // scores, block state
};

// One launch. Returns false when `stop` fired before out was complete.
bool run_paged_attention(const PagedAttentionPlan& plan, const PagedAttentionOperands& op, PagedAttentionWorkspace& ws,
                         ThreadPool& pool, StopFlag& stop);

}  // namespace ktune::cpu
