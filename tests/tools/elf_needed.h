// The shared libraries an ELF64 file names in its dynamic section (DT_NEEDED), read with
// <elf.h> alone so that a test does not depend on readelf being installed.
#pragma once

#include <elf.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

namespace minfer::test {

// Throws std::runtime_error when `path` is not a readable little-endian ELF64 file. A static
// executable (no dynamic section) needs nothing: an empty list.
inline std::vector<std::string> elf_needed_libraries(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  const std::string bytes{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  auto read = [&]<typename T>(T& out, uint64_t offset) {
    if (offset > bytes.size() || bytes.size() - offset < sizeof(T))
      throw std::runtime_error(path + ": truncated ELF file");
    std::memcpy(&out, bytes.data() + offset, sizeof(T));
  };
  Elf64_Ehdr eh;
  read(eh, 0);
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_ident[EI_DATA] != ELFDATA2LSB)
    throw std::runtime_error(path + " is not a little-endian ELF64 file");
  std::vector<std::string> needed;
  for (uint16_t i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr dynamic;
    read(dynamic, eh.e_shoff + uint64_t(i) * eh.e_shentsize);
    if (dynamic.sh_type != SHT_DYNAMIC) continue;
    Elf64_Shdr strings;  // .dynstr, which the entries' names are offsets into
    read(strings, eh.e_shoff + uint64_t(dynamic.sh_link) * eh.e_shentsize);
    for (uint64_t at = 0; at + sizeof(Elf64_Dyn) <= dynamic.sh_size; at += sizeof(Elf64_Dyn)) {
      Elf64_Dyn d;
      read(d, dynamic.sh_offset + at);
      if (d.d_tag == DT_NULL) break;
      if (d.d_tag != DT_NEEDED) continue;
      const uint64_t name = strings.sh_offset + d.d_un.d_val;
      if (d.d_un.d_val >= strings.sh_size || name >= bytes.size())
        throw std::runtime_error(path + ": DT_NEEDED name outside .dynstr");
      needed.emplace_back(bytes.c_str() + name);
    }
  }
  return needed;
}

}  // namespace minfer::test
