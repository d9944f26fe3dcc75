#pragma once
// An argument's contents from a file a user wrote (numpy's .npy, or raw binary with a dtype): data
// a spec cannot generate, such as slopes precomputed from a polygon. Read only, never made here:
// a spec read from disk does not start a process, so the user runs their script first.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "ktune/kernel_spec.h"

namespace ktune {

// A .npy file's header (format versions 1.0 to 3.0).
struct NpyHeader {
  ElemType type = ElemType::F32;
  std::vector<std::uint64_t> shape;
  bool fortran_order = false;
  std::size_t data_offset = 0;  // where the elements start
  std::uint64_t count() const;
};

// Throws InputError naming the file for anything but a little-endian (or byte-sized) f16, f32, f64,
// i8, u8, i32, u32 or i64 array, and for Fortran order over more than one dimension.
NpyHeader read_npy_header(const std::filesystem::path& file);

// The elements of `file` as a buffer of `count` elements of type `type`: a .npy file (by its
// extension) must hold exactly that type and count; any other file is raw, `raw_type` elements
// (which must be `type`), count x element size bytes. Throws InputError naming the file, what it
// holds and what the argument expects.
std::vector<unsigned char> load_array_file(const std::filesystem::path& file, const std::string& raw_type,
                                           ElemType type, std::uint64_t count);

}  // namespace ktune
