// A session's plans by input shapes (and the values of shape-like inputs), least recently used
// first out beyond a count and a byte bound.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "runtime/plan.h"

namespace minfer {

class PlanCache {
 public:
  using Dims = std::vector<std::vector<int64_t>>;
  using Key = std::pair<Dims, Dims>;  // input shapes, values of shape-like inputs

  PlanCache(size_t max_plans, size_t max_bytes) : max_plans_(max_plans), max_bytes_(max_bytes) {}
  std::shared_ptr<Plan> find(const Key& key);  // and marks it most recently used
  // Adds a plan, then drops least recently used ones beyond the bounds (never this one).
  void insert(const Key& key, std::shared_ptr<Plan> plan);
  // Dropped plans are freed once their running runs finish (they hold a reference).
  void clear();
  size_t size() const { return order_.size(); }
  size_t count_values_plans() const;
  template <typename F>
  void for_each(F f) const {
    for (const auto& e : order_) f(*e.second);
  }

 private:
  static size_t bytes_of(const Plan& p) { return p.arena_bytes[0] + p.arena_bytes[1]; }
  size_t max_plans_, max_bytes_, bytes_ = 0;
  std::list<std::pair<Key, std::shared_ptr<Plan>>> order_;  // most recently used first
  std::map<Key, decltype(order_)::iterator> index_;
};

}  // namespace minfer
