#include "tools/format.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>

namespace minfer::cli {

Table::Table(std::vector<std::string> header, std::string align)
    : header_(std::move(header)), align_(std::move(align)) {
  align_.resize(header_.size(), 'l');
}

void Table::add(std::vector<std::string> row) {
  row.resize(header_.size());
  rows_.push_back(std::move(row));
}

std::string Table::str(const std::string& indent, bool header) const {
  std::vector<size_t> width(header_.size(), 0);
  for (size_t c = 0; c < header_.size(); ++c) {
    width[c] = header_[c].size();
    if (!header) width[c] = 0;
    for (const auto& row : rows_) width[c] = std::max(width[c], row[c].size());
  }
  auto render = [&](const std::vector<std::string>& cells) {
    std::string line = indent;
    for (size_t c = 0; c < cells.size(); ++c) {
      const size_t pad = width[c] - cells[c].size();
      const bool last = c + 1 == cells.size();
      if (align_[c] == 'r')
        line += std::string(pad, ' ') + cells[c];
      else
        line += cells[c] + (last ? "" : std::string(pad, ' '));
      if (!last) line += "  ";
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    return line + "\n";
  };
  std::string out;
  if (!header) {
    for (const auto& row : rows_) out += render(row);
    return out;
  }
  out = render(header_);
  std::string rule = indent;
  for (size_t c = 0; c < width.size(); ++c)
    rule += std::string(width[c], '-') + (c + 1 < width.size() ? "  " : "");
  out += rule + "\n";
  for (const auto& row : rows_) out += render(row);
  return out;
}

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string format_ms(double ms) {
  if (ms >= 1000) return fixed(ms / 1000, 2) + " s";
  if (ms >= 100) return fixed(ms, 0) + " ms";
  if (ms >= 10) return fixed(ms, 1) + " ms";
  if (ms >= 1) return fixed(ms, 2) + " ms";
  return fixed(ms, 3) + " ms";
}

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  return u == 0 ? fixed(bytes, 0) + " B" : fixed(bytes, 2) + " " + units[u];
}

std::string format_count(double n) {
  const char* units[] = {"", " K", " M", " G", " T"};
  int u = 0;
  while (std::abs(n) >= 1000 && u < 4) {
    n /= 1000;
    ++u;
  }
  return u == 0 ? fixed(n, 0) : fixed(n, 2) + units[u];
}

std::string format_percent(double fraction) { return fixed(100.0 * fraction, 2) + "%"; }

std::string base_name(const std::string& path) {
  auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace minfer::cli
