// Output helpers for people: aligned tables, numbers with units, a clock.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace minfer::cli {

// A text table: a header row, a rule, then rows; columns padded to their widest cell.
class Table {
 public:
  // `align` per column: 'l' or 'r' (default 'l').
  explicit Table(std::vector<std::string> header, std::string align = "");
  void add(std::vector<std::string> row);
  size_t rows() const { return rows_.size(); }
  // Without `header`, only the rows (a key/value list).
  std::string str(const std::string& indent = "", bool header = true) const;

 private:
  std::vector<std::string> header_;
  std::string align_;
  std::vector<std::vector<std::string>> rows_;
};

std::string fixed(double v, int decimals);    // "3.14"
std::string format_ms(double ms);             // "0.412 ms", "31.2 ms", "1.52 s"
std::string format_bytes(double bytes);       // "1.50 MiB"
std::string format_count(double n);           // "11.69 M", "1.82 G", "512"
std::string format_percent(double fraction);  // "79.80%"

// Milliseconds since an arbitrary start, monotonic.
inline double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

// The file name part of a path ("a/b/c.png" -> "c.png").
std::string base_name(const std::string& path);

}  // namespace minfer::cli
