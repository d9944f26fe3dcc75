#pragma once
// KernelSpec: a GPU kernel family as data. A JSON spec names a kernel source and says how to
// tune it (parameters, default space, constraints), how to build one config (options, defines,
// template arguments of the entry point), how to launch it (grid, block and dynamic shared
// memory as expressions of the problem, the config and the device), which arguments it takes
// and how to generate them, and what to validate it against. Built-in families and a user's
// `--kernel-spec FILE` go through the same parser. No Qt and no vendor here: the spec is checked
// and evaluated without a GPU; backends (cuda, hip) turn it into compiled, launched kernels, and
// each says through its SpecDialect what its specs may use beyond the shared format (device
// property names, tensor maps, reference kinds).
//
// Format (every expression is a ktune::Expression over the problem's numeric key fields, the
// config's parameters and the device's properties; "${name}" in text is replaced by a text key
// field, a parameter or a define):
// {
//   "name": "gemm", "description": "...", "source": "gemm.cu",   // source relative to the spec
//                                      // (its #include "x.cuh" of the spec's folder: see headers())
//   "key_fields": [{"name": "M", "help": "..."}, {"name": "dtype", "numeric": false,
//                   "default": "f16", "choices": ["f16", "bf16"]}],
//   "bucket_field": "M", "tp_out_field": "N", "tp_in_field": "K",  // --tp-split-dim out / in
//   "tp_head_fields": ["num_q_heads", {"name": "num_kv_heads", "at_least_one": true}],  // heads
//   "shape_rules": [{"expr": "mod(num_q_heads, num_kv_heads) == 0", "description": "GQA"}],
//   "flops": "2*M*N*K", "bytes": "2*(M*K + K*N + M*N)",
//   "space": {"parameters": {...}, "constraints": [...]},          // SearchSpace JSON
//   "default_config": {"BM": 64, ...},
//   "compile": {"options": ["-std=c++17"], "params_as_defines": true,
//               "defines": {"T": {"field": "dtype", "map": {"f16": "__half", "bf16": "__nv_bfloat16"}},
//                           "EVEN": "K % 64 == 0"}},
//   "arguments": [{"name": "A", "buffer": "${dtype}", "count": "M*K", "init": {"uniform": [-1, 1]}},
//                 {"name": "C", "buffer": "${dtype}", "count": "M*N", "role": "output"},
//                 {"name": "ws", "buffer": "f32", "count": "SPLITK*M*N", "role": "workspace", "init": "zero"},
//                 {"name": "M", "scalar": "i32", "value": "M"},
//                 {"name": "tmA", "tensor_map": "A", "dims": ["K", "M"], "box": ["64", "BM"], "swizzle": 128}],
//                                                        // tensor maps: dialects that have them (cuda)
//   "launches": [{"entry": "gemm<${T}>", "grid": ["ceil_div(N,BN)", "ceil_div(M,BM)", "SPLITK"],
//                 "block": ["WARPS*32"], "cluster": ["CLUSTER_M", "1", "1"],
//                 "shared_bytes": "...", "args": ["A", "B", "C", "M"], "when": "1"}],
//   "reference": {"kind": "cublas_gemm", "a": "A", "b": "B", "c": "C", "m": "M", "n": "N", "k": "K",
//                 "b_layout": "kn" | "nk", "b_scale": "scales"}   // a kind of the dialect (cuda: cublas_gemm;
//                                                                  // hip: device_gemm), or {"kind": "config",
//                                                                  "config": {...}}
//                                                                  // or {"kind": "kernel", "entry", "grid", "block",
//                                                                  "args", ...}
//   "baseline": {"kind": "cublaslt_block_scaled", "when": "q_dtype == \"fp8_e4m3\"", "a": "A", ...}
//                                                   // a library call of the dialect timed beside every
//                                                   // config (cuda: cublaslt_block_scaled), where "when" holds
//   "check": {"reduce": "sum" | "max", "count": "num_blocks", "atol": 1e-3, "rtol": 1e-5,
//             "region": {"dims": ["nx", "ny"], "begin": [1, 1], "end": ["nx-1", "ny-1"]},
//             "ignore_unwritten": true}
// }
// Entry names are C++ names, resolved by the backend's compiler ("matmul_kernel" declared without
// extern "C", "gemm<float, 4>"). A buffer with "constant": "d_filter" also fills that
// __constant__ symbol of the module with its data. A launch's "defines" override the
// config's for that launch alone (it is compiled apart: a reduction's second pass with
// num_blocks=1). An output's "init" is "poison" (NaN bytes, the default: an element never
// written cannot pass; a mismatch still holding the poison is reported as never written) or
// "zero" (kernels that accumulate with atomics). A check compares every element unless its
// "region" (a box of a dense row-major view of the output, dims innermost first, [begin, end)
// per dim; the dims' product is the output's count) or "ignore_unwritten" (elements the
// reference, a "config" or "kernel", leaves as poison: a border the kernel never writes) narrows
// it; neither goes with "reduce". An input's "init" may be {"file": "slopes.npy"} (a .npy file:
// its dtype must be the buffer's, its shape's product the count, C order) or {"file": "x.bin",
// "dtype": "f32"} (raw little-endian elements, count x element size bytes): data a user computed
// with their own script beforehand, the same for every config. The path is relative to the
// spec's folder and confined to it as "source" is; ktune never runs a command to make it. An
// input's data may depend on a text key field: "init": {"field": "q_dtype", "map": {"fp8_e4m3":
// {"e4m3": [-448, 448]}, "int8": {"uniform": [-127, 127]}}} draws each problem's with the entry of
// its value, "zero", {"uniform"} or {"e4m3"} (one entry for every choice of the field). An
// output whose count
// reads a parameter (configs writing different numbers of partial results) is allocated at its
// maximum over the default space and needs a reduced "check". Every launch's threads per block
// and dynamic shared memory are bounded by max_threads_per_block and the dialect's shared memory
// limit (smem_per_block_optin, lds_per_block) without being told: derived constraints join the
// default space when the dialect has those properties.
//
// Thread-block clusters (CUDA, sm_90 and newer): a launch's optional "cluster" holds 1 to 3
// expressions, as "grid" and "block" do (missing dimensions are 1), of the problem, the config
// and the device, never generated data. Its blocks are co-scheduled on one GPC and share
// distributed shared memory (%cluster_ctarank, cluster.sync()). Missing, or all ones, the launch
// is a plain one. Otherwise derived constraints prune configs before any compile: the device has
// clusters (cc_major >= 9), each grid dimension is a multiple of the cluster's (where the grid
// reads no generated data; else the config fails as a launch_error when planned) and the cluster
// has at most 8 blocks, the portable size (ktune does not ask for non-portable ones). Dialects
// without clusters (hip) refuse a "cluster" other than ones at load.
//
// Generated index data (decode attention over a paged KV cache; resources/kernels/cuda/
// paged_attention.json):
//   {"name": "lengths", "buffer": "i32", "count": "num_sequences",
//    "init": {"lengths": {"min": "min_len", "max": "max_model_len"}}},
//   {"name": "page_table", "buffer": "i32", "count": "num_sequences*ceil_div(max_model_len,page_size)",
//    "init": {"page_table": {"lengths": "lengths", "page_size": "page_size", "shuffle": true}}},
//   {"name": "K", "buffer": "${dtype}", "count": "page_table_pages*num_kv_heads*page_size*head_dim"}
// "lengths" (i32 or i64): `count` seeded integers uniform in [min, max], one of them (at a seeded
// index) exactly max, so the problem's longest length always runs; 1 <= min <= max. "page_table"
// (i32), over a lengths argument declared before it whose count N divides its own: N rows of
// count/N entries; row b's first ceil(len_b/page_size) entries are distinct pages of one pool of
// exactly P = sum_b ceil(len_b/page_size) pages, in a seeded random order ("shuffle": false: 0..P-1
// in order), the rest 0; a length needing more pages than a row holds is an error. min, max and
// page_size are expressions ("${...}" substituted) evaluated with the default config: the data is
// the same for every config of a problem, and on every machine. Each publishes a variable,
// "<name>_total" (the lengths' sum) and "<name>_pages" (P), that later arguments (counts, scalar
// values, tensor maps, inits), launch grids, check.count and the reference's expressions may
// read; the space's constraints, flops, bytes, defines and a launch's block, cluster,
// shared_bytes and when may not (they shape the search space, which is the same for every input).
//
// Mixture-of-experts routing (grouped GEMM):
//   {"name": "route", "buffer": "i32", "count": "tokens*topk",
//    "init": {"routing": {"experts": "experts", "topk": "topk"}}},
//   {"name": "offsets", "buffer": "i32", "count": "experts+1", "init": {"expert_offsets": "route"}},
//   {"name": "rows", "buffer": "i32", "count": "tokens*topk",
//    "init": {"expert_order": {"routing": "route", "index": "row"}}}
// "routing" (i32): routed row r = t*topk + j holds token t's j-th expert, topk distinct experts a
// token, popularity skewed (1/rank^1.5 over a seeded ranking: a few hot experts and, with many,
// some empty ones), the CPU grouped_gemm family's generator (ktune/moe_routing.h); its count must
// be a multiple of topk (tokens = count / topk). "expert_offsets" (i32, experts + 1 entries): the
// first expert-order position of each expert, then the routed rows' count. "expert_order" (i32,
// one per routed row): the routed rows sorted by expert (stable), as routed-row indices ("index":
// "row", the scatter/gather of permute_y) or token indices ("token", the gather of permute_x).
// "routing" publishes "<name>_busiest", the hottest expert's rows, for grids and scalars.
#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "ktune/compile_cache.h"
#include "ktune/config.h"
#include "ktune/expression.h"
#include "ktune/kernel_family.h"
#include "ktune/problem.h"

namespace ktune {

enum class ElemType { F16, BF16, F32, F64, I8, U8, I32, U32, I64 };
std::size_t elem_size(ElemType t);
const char* to_string(ElemType t);
ElemType elem_type_from_string(const std::string& s);  // "f16", "bf16", "f32", ...; throws InputError

enum class ArgRole { Input, Output, Workspace };

// How a parameter's value reaches the kernel as a -D define: integers as themselves, booleans as
// 1 / 0 (for #if), strings as a C string literal (-Dcache_modifier=".cg"). "${name}" in spec text
// gives integers and booleans the same way and strings without quotes.
std::string define_value(const ParamValue& v);

struct ArgInit {
  // Poison: NaN bytes (0xff) before each validation run; outputs only, their default.
  // Lengths, PageTable: generated index data (sequence lengths, a paged KV cache's page table).
  // Routing, ExpertOffsets, ExpertOrder: a mixture-of-experts routing and its expert-order views.
  // File: the contents of a .npy or raw binary file in the spec's folder (data a user computed).
  // E4m3: fp8 e4m3 codes (a u8 or i8 buffer) of values uniform in [lo, hi], each the nearest
  // finite code: never a NaN code, which a uniform over the bytes would draw.
  enum class Kind {
    None,
    Zero,
    Uniform,
    E4m3,
    Poison,
    Lengths,
    PageTable,
    Routing,
    ExpertOffsets,
    ExpertOrder,
    File
  } kind = Kind::None;
  double lo = -1, hi = 1;      // Uniform: integers types draw integers in [lo, hi]; E4m3: the values' range
  std::string min, max;        // Lengths: expressions of the shortest and longest length
  std::string lengths;         // PageTable: the Lengths argument whose sequences it pages
  std::string page_size;       // PageTable: tokens per page, an expression
  bool shuffle = true;         // PageTable: pages in a seeded random order (else 0, 1, ...)
  std::string experts, topk;   // Routing: expressions of the experts and each token's choices
  std::string routing;         // ExpertOffsets, ExpertOrder: the Routing argument they view
  bool order_tokens = false;   // ExpertOrder: token indices (else routed-row indices)
  std::filesystem::path file;  // File: resolved, inside the spec's folder
  std::string file_dtype;      // File: a raw file's element type ("f32"); empty for .npy (its header says)
  bool generated_index() const {
    return kind == Kind::Lengths || kind == Kind::PageTable || kind == Kind::Routing || kind == Kind::ExpertOffsets ||
           kind == Kind::ExpertOrder;
  }
};

// A kernel argument: a device buffer, a scalar, or a tensor map (a TMA descriptor, passed by
// value, describing a buffer of the spec as a dense row-major tensor: dims innermost first, and
// the box of elements one copy moves).
struct SpecArgument {
  enum class Kind { Buffer, Scalar, TensorMap };
  std::string name;
  Kind kind = Kind::Buffer;
  std::string dtype;                   // buffer, scalar; may hold "${field}"; resolved per problem
  std::string count;                   // buffer: element count expression
  std::string value;                   // scalar: value expression
  std::string tensor;                  // tensor map: the buffer it describes
  std::vector<std::string> dims, box;  // tensor map: expressions, innermost first
  int swizzle = 0;                     // tensor map: shared-memory swizzle span in bytes (0, 32, 64, 128)
  ArgRole role = ArgRole::Input;
  ArgInit init;
  // An input whose data depends on a text key field ("init": {"field": "q_dtype", "map": {...}}):
  // the field, and per value of it the drawn init (zero, uniform or e4m3) that replaces `init`.
  std::string init_field;
  std::map<std::string, ArgInit> init_by_value;
  std::string constant;  // buffer (input): the __constant__ symbol its data also fills, per loaded module
  bool is_buffer() const { return kind == Kind::Buffer; }
  // The init that fills this argument for problem `p`: `init`, or init_by_value's entry for the
  // problem's value of init_field (InputError naming the field and value when the map has none).
  const ArgInit& init_for(const Problem& p) const;
  // The variable its generated data publishes to later expressions: "<name>_total" (Lengths: the
  // sum), "<name>_pages" (PageTable: the pool's page count), "<name>_busiest" (Routing: the
  // hottest expert's rows); empty for other inits.
  std::string published() const;
};

struct SpecLaunch {
  std::string entry;  // may hold "${name}" and template arguments
  std::array<std::string, 3> grid{"1", "1", "1"};
  std::array<std::string, 3> block{"1", "1", "1"};
  std::array<std::string, 3> cluster{"1", "1", "1"};  // thread-block cluster, in blocks
  std::string shared_bytes = "0";                     // dynamic shared memory
  std::vector<std::string> args;                      // argument names, in the kernel's parameter order
  std::string when;                                   // empty = always; else launched when non-zero
  // name -> expression: defines of this launch alone, replacing the config's of that name (the
  // launch is then compiled apart from the others).
  std::vector<std::pair<std::string, std::string>> defines;
};

struct SpecReference {
  std::string kind = "none";                  // "none" | "config" | "kernel" | a kind of the dialect ("cublas_gemm")
  std::map<std::string, std::string> fields;  // a dialect's kind: its fields ("a", "m", "b_layout", ...)
  Config config;                              // config: the trusted config whose output is the reference
  // kernel: a trusted kernel of the same source with its own launch geometry (a naive
  // convolution), built with the default config's defines plus the launch's own, writing
  // `output` (a declared buffer; the spec's output when empty).
  SpecLaunch launch;
  std::string output;
};

// The spec's "baseline": a library call of the dialect (`kind`, its `fields`) that writes the
// spec's output, timed beside the configs of problems for which `when` holds (empty: all).
struct SpecBaseline {
  std::string kind;  // empty: none
  std::map<std::string, std::string> fields;
  std::string when;
};

// How an output is compared with the reference: element by element, or (`reduce` set) one
// number from each, the sum or the maximum of its first `count` elements (count evaluated with
// each side's config: configs that write different numbers of partial results).
struct SpecCheck {
  enum class Reduce { None, Sum, Max } reduce = Reduce::None;
  std::string count;                 // expression; empty: the whole output
  std::optional<double> atol, rtol;  // override the run's tolerance for this spec's outputs (either kind)
  // Element by element only: the box compared of a dense row-major view of the output (dims
  // innermost first; elements with begin <= x < end in every dim), expressions evaluated with the
  // default config; elements outside it are never checked (a stencil's border).
  struct Region {
    std::vector<std::string> dims, begin, end;
  };
  std::optional<Region> region;
  // Elements the reference leaves unwritten (still the poison bytes) are not checked either.
  bool ignore_unwritten = false;
};

// A launch evaluated for one problem and config.
struct LaunchGeometry {
  std::string entry;  // substituted
  std::array<std::uint64_t, 3> grid{1, 1, 1};
  std::array<std::uint64_t, 3> block{1, 1, 1};
  std::array<std::uint64_t, 3> cluster{1, 1, 1};
  std::uint64_t shared_bytes = 0;
  bool active = true;
  std::uint64_t threads() const { return block[0] * block[1] * block[2]; }
  std::uint64_t cluster_blocks() const { return cluster[0] * cluster[1] * cluster[2]; }
  // A cluster of one block is no cluster: such a launch goes to the driver as any other.
  bool clustered() const { return cluster_blocks() != 1; }
};

struct SpecDefine {
  std::string name;
  std::string expr;                        // numeric define: an expression
  std::string field;                       // text define: a text key field ...
  std::map<std::string, std::string> map;  // ... mapped value by value
};

// What one backend's specs may use beyond the shared format; the backend owns it
// (cuda_spec_dialect(), hip_spec_dialect()) and passes it to the parser.
struct SpecDialect {
  // A reference computed by the backend itself (a vendor library, a trusted device kernel).
  struct ReferenceKind {
    std::vector<std::string> arguments;    // fields naming a declared argument (required)
    std::vector<std::string> expressions;  // fields holding an expression (required)
    std::vector<std::string> optional_arguments;
    std::map<std::string, std::vector<std::string>> choices;  // optional field -> allowed values, first = default
    // C = A x B computed by the backend in f32: a, b, c (arguments), m, n, k, b_layout ("kn" |
    // "nk"), b_scale (B's per-column scales, for quantized weights). CUDA's cublas_gemm, HIP's device_gemm.
    static ReferenceKind gemm();
  };
  // A library call timed beside the configs as the baseline, where the spec's reference is not
  // already one (a reference kernel): the same fields as a reference kind's.
  using BaselineKind = ReferenceKind;
  std::string backend;                      // "cuda": the default of a spec's "backend"
  std::set<std::string> device_properties;  // names a spec's expressions may read
  // The device property bounding static + dynamic shared memory of one block ("smem_per_block_optin",
  // AMD's "lds_per_block"); with max_threads_per_block and regs_per_block, every launch is held to it.
  std::string shared_memory_limit;
  bool tensor_maps = false;  // "tensor_map" arguments (TMA descriptors)
  bool clusters = false;     // a launch's "cluster" (thread-block clusters)
  std::map<std::string, ReferenceKind> references;
  // CUDA's "cublaslt_block_scaled": Y = block-scaled 8-bit A [m, k] x B [n, k]^T by cuBLASLt (e4m3
  // codes, f32 scales per 1x128 block of A and 128x128 block of B), the call torch._scaled_mm makes.
  std::map<std::string, BaselineKind> baselines;
};

struct KernelSpecReader;

// A spec's "source" must resolve (symlinks and ".." followed) inside the spec's folder: a spec
// someone hands you could otherwise have ktune read and compile any file it can open.
// KTUNE_ALLOW_SOURCE_OUTSIDE_SPEC=1 lifts that for the whole process and the workers it starts,
// which inherit it; the CLI's --allow-source-outside-spec sets it.
inline constexpr const char* kAllowSourceOutsideSpecEnv = "KTUNE_ALLOW_SOURCE_OUTSIDE_SPEC";
bool source_outside_spec_allowed();

class KernelSpec {
 public:
  // Parses a spec; `base_dir` resolves "source", or `files` (name -> text: sources embedded in
  // the binary) when given. Throws InputError naming the origin (file), the JSON path of the
  // culprit and what is expected.
  static KernelSpec from_json(const nlohmann::json& j, const std::filesystem::path& base_dir,
                              const SpecDialect& dialect, const std::string& origin = "spec",
                              const std::map<std::string, std::string>* files = nullptr);
  static KernelSpec load(const std::filesystem::path& file, const SpecDialect& dialect);

  const KernelFamily& family() const { return family_; }
  const std::string& source() const { return source_; }  // kernel source text
  const std::filesystem::path& source_file() const { return source_file_; }
  // What the source includes by a quoted name ("ktune_device.cuh", "sub/util.cuh") that is a file
  // of the spec's folder (confined to it as "source" is: a name leading out is refused at load,
  // naming it) or, for a built-in spec, an embedded file; headers' own includes too, every name
  // read from the spec's folder. Include name -> text. Other names (<cuda_fp16.h>, a quoted name
  // no such file has) are left to the compiler's include path.
  const std::map<std::string, std::string>& headers() const { return headers_; }
  // The source and its headers, as a toolchain compiles them (file: the source's file name).
  KernelSource program() const;
  const std::vector<SpecArgument>& arguments() const { return args_; }
  const std::vector<SpecLaunch>& launches() const { return launches_; }
  const SpecReference& reference() const { return reference_; }
  const SpecBaseline& baseline() const { return baseline_; }
  const SpecCheck& check() const { return check_; }
  const std::vector<std::string>& options() const { return options_; }
  const SpecArgument* argument(const std::string& name) const;
  // The output buffer compared with the reference.
  const SpecArgument& output() const;

  // `c` with the parameters it lacks taken from the default config: a registry entry written
  // before the family gained a parameter (gemm's WGMMA) still builds the kernel it named.
  Config complete(const Config& c) const;
  // Variables for every expression: problem numeric fields, config parameters, then `device`:
  // device properties and, in a session, the variables generated inputs publish
  // (SpecInputs::variables; may be empty), in that order of precedence. Every method taking
  // `device` passes it here.
  Variables variables(const Problem& p, const Config& c, const Variables& device = {}) const;
  // Replaces "${name}" by a text key field, a parameter or a define's value; throws InputError
  // for an unknown name.
  std::string substitute(const std::string& text, const Problem& p, const Config& c) const;
  // Defines for one build: every parameter (when params_as_defines: define_value()), then the
  // spec's defines.
  std::vector<std::pair<std::string, std::string>> defines(const Problem& p, const Config& c) const;
  // Compiler options for one build: the spec's options plus -D for every define, sorted so a
  // cache key does not depend on map order.
  std::vector<std::string> compile_options(const Problem& p, const Config& c) const;
  LaunchGeometry geometry(const SpecLaunch& l, const Problem& p, const Config& c, const Variables& device = {}) const;
  ElemType arg_type(const SpecArgument& a, const Problem& p, const Config& c) const;
  std::uint64_t arg_count(const SpecArgument& a, const Problem& p, const Config& c, const Variables& device = {}) const;
  // The largest arg_count over the default space's configs that its constraints allow for this
  // problem and device (the default config's when the count reads no parameter): the size a
  // session allocates for buffers whose size depends on the config.
  std::uint64_t max_arg_count(const SpecArgument& a, const Problem& p, const Variables& device = {}) const;
  // Defines of launch `l` for one build: defines(p, c) with the launch's own replacing those of
  // the same name.
  std::vector<std::pair<std::string, std::string>> launch_defines(const SpecLaunch& l, const Problem& p,
                                                                  const Config& c) const;
  std::vector<std::string> launch_compile_options(const SpecLaunch& l, const Problem& p, const Config& c) const;
  // The number the reduced check compares: `reduce` of the first `count` (check().count
  // evaluated for `c`, or `total`) elements of `data`; throws InputError when count exceeds `total`.
  double reduced(const void* data, ElemType t, std::size_t total, const Problem& p, const Config& c,
                 const Variables& device = {}) const;
  // The output elements the check compares for this problem (1: compared), from check().region;
  // empty when it compares every one. `count`: the output's elements. Throws InputError naming
  // the region when its dims do not hold `count` elements or a bound leaves its dim.
  std::vector<std::uint8_t> region_elements(const Problem& p, std::size_t count, const Variables& device = {}) const;
  // __constant__ symbols the spec fills: symbol -> the buffer argument whose data goes there.
  std::map<std::string, std::string> constants() const;
  // The dialect's SpecDialect::shared_memory_limit.
  const std::string& shared_memory_limit() const { return shared_memory_limit_; }

 private:
  friend struct KernelSpecReader;  // from_json's parts (kernel_spec_parse.cpp)
  friend struct KernelSpecChecks;  // and its final checks (kernel_spec_checks.cpp)
  KernelFamily family_;
  std::string source_;
  std::filesystem::path source_file_;
  std::map<std::string, std::string> headers_;
  std::vector<std::string> options_;
  bool params_as_defines_ = true;
  std::vector<SpecDefine> defines_;
  std::vector<SpecArgument> args_;
  std::vector<SpecLaunch> launches_;
  SpecReference reference_;
  SpecBaseline baseline_;
  SpecCheck check_;
  std::string output_;
  std::string shared_memory_limit_;
};

// Stable 64-bit FNV-1a; used for cache keys and seeds (identical across runs and machines).
std::uint64_t fnv1a64(const std::string& data, std::uint64_t seed = 0xcbf29ce484222325ULL);

}  // namespace ktune
