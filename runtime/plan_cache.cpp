#include "runtime/plan_cache.h"

namespace minfer {

std::shared_ptr<Plan> PlanCache::find(const Key& key) {
  auto it = index_.find(key);
  if (it == index_.end()) return nullptr;
  order_.splice(order_.begin(), order_, it->second);
  return it->second->second;
}

void PlanCache::insert(const Key& key, std::shared_ptr<Plan> plan) {
  if (auto it = index_.find(key); it != index_.end()) {
    bytes_ -= bytes_of(*it->second->second);
    order_.erase(it->second);
    index_.erase(it);
  }
  bytes_ += bytes_of(*plan);
  order_.emplace_front(key, std::move(plan));
  try {
    index_[key] = order_.begin();
  } catch (...) {
    bytes_ -= bytes_of(*order_.front().second);
    order_.pop_front();
    throw;
  }
  while (order_.size() > 1 &&
         (order_.size() > max_plans_ || (max_bytes_ && bytes_ > max_bytes_))) {
    bytes_ -= bytes_of(*order_.back().second);
    index_.erase(order_.back().first);
    order_.pop_back();
  }
}

void PlanCache::clear() {
  index_.clear();
  order_.clear();
  bytes_ = 0;
}

size_t PlanCache::count_values_plans() const {
  size_t n = 0;
  for (const auto& e : order_) n += !e.first.second.empty();
  return n;
}

}  // namespace minfer
