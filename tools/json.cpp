#include "tools/json.h"

#include <charconv>
#include <cmath>

#include "runtime/json.h"

namespace minfer::cli {

Json& Json::push(Json v) {
  items_.push_back(std::move(v));
  return *this;
}

Json& Json::set(const std::string& key, Json v) {
  for (auto& [k, old] : members_)
    if (k == key) {
      old = std::move(v);
      return *this;
    }
  members_.emplace_back(key, std::move(v));
  return *this;
}

bool Json::all_scalars() const {
  for (const Json& j : items_)
    if (j.kind_ == Kind::Array || j.kind_ == Kind::Object) return false;
  return true;
}

std::string Json::dump(int indent) const {
  std::string out;
  write(out, indent, 0);
  return out;
}

void Json::write(std::string& out, int indent, int depth) const {
  auto newline = [&](int d) {
    if (indent < 0) return;
    out += '\n';
    out.append(static_cast<size_t>(indent * d), ' ');
  };
  switch (kind_) {
    case Kind::Null:
      out += "null";
      break;
    case Kind::Bool:
      out += bool_ ? "true" : "false";
      break;
    case Kind::Int:
      out += std::to_string(int_);
      break;
    case Kind::Number: {
      if (!std::isfinite(number_)) {  // JSON has no NaN/Inf
        out += "null";
        break;
      }
      char buf[32];
      auto res = std::to_chars(buf, buf + sizeof buf, number_);  // shortest round-trip form
      out.append(buf, res.ptr);
      break;
    }
    case Kind::String:
      out += json::quote(string_);
      break;
    case Kind::Array:
      if (items_.empty()) {
        out += "[]";
        break;
      }
      out += '[';
      if (all_scalars()) {  // short arrays of numbers/strings (shapes, top-k) stay on one line
        for (size_t i = 0; i < items_.size(); ++i) {
          if (i) out += indent < 0 ? "," : ", ";
          items_[i].write(out, indent, depth + 1);
        }
        out += ']';
        break;
      }
      for (size_t i = 0; i < items_.size(); ++i) {
        if (i) out += ',';
        newline(depth + 1);
        items_[i].write(out, indent, depth + 1);
      }
      newline(depth);
      out += ']';
      break;
    case Kind::Object:
      if (members_.empty()) {
        out += "{}";
        break;
      }
      out += '{';
      for (size_t i = 0; i < members_.size(); ++i) {
        if (i) out += ',';
        newline(depth + 1);
        out += json::quote(members_[i].first);
        out += indent < 0 ? ":" : ": ";
        members_[i].second.write(out, indent, depth + 1);
      }
      newline(depth);
      out += '}';
      break;
  }
}

}  // namespace minfer::cli
