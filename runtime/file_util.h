// Small file helpers shared by the model and tensor readers/writers (private to the library).
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "minfer/error.h"

namespace minfer::detail {

// Opens `path` for binary reading; throws InvalidArgument naming the file if it cannot.
inline std::ifstream open_for_reading(const std::string& path, const std::string& what) {
  std::error_code ec;
  check(!std::filesystem::is_directory(path, ec), ErrorCode::InvalidArgument,
        "cannot open " + what + " '" + path + "': it is a directory");
  std::ifstream in(path, std::ios::binary);
  check(bool(in), ErrorCode::InvalidArgument, "cannot open " + what + " '" + path + "'");
  return in;
}

// Size of an open stream in bytes (the read position is left at the start).
inline uint64_t stream_size(std::ifstream& in) {
  in.seekg(0, std::ios::end);
  auto end = in.tellg();
  in.seekg(0, std::ios::beg);
  return end < 0 ? 0 : static_cast<uint64_t>(end);
}

// Reads a whole file into a string; throws InvalidArgument naming the file if it cannot.
inline std::string read_file(const std::string& path, const std::string& what) {
  std::ifstream in = open_for_reading(path, what);
  std::string bytes(stream_size(in), '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  check(bool(in), ErrorCode::InvalidArgument, "cannot read " + what + " '" + path + "'");
  return bytes;
}

// Writes `bytes` to `path`, replacing it; throws InvalidArgument naming the file on failure.
inline void write_file(const std::string& path, const std::string& bytes, const std::string& what) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  check(bool(out), ErrorCode::InvalidArgument, "cannot create " + what + " '" + path + "'");
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  check(bool(out), ErrorCode::InvalidArgument, "cannot write " + what + " '" + path + "'");
}

// numel * itemsize for dims read from a file, or -1 if a dim is negative or the product would
// overflow / exceed `limit` bytes. Lets readers validate sizes before allocating anything.
inline int64_t checked_nbytes(const std::vector<int64_t>& dims, size_t itemsize,
                              int64_t limit = int64_t{1} << 40) {
  int64_t n = static_cast<int64_t>(itemsize);
  for (int64_t d : dims) {
    if (d < 0) return -1;
    if (d != 0 && n > limit / d) return -1;
    n *= d;
  }
  return n;
}

}  // namespace minfer::detail
