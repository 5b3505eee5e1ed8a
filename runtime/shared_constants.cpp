#include "runtime/shared_constants.h"

namespace minfer {

std::shared_ptr<const void> SessionConstants::find_or_make(
    const void* owner, const Device& device, const std::string& key, size_t bytes,
    const std::function<void(size_t)>& admit,
    const std::function<std::shared_ptr<const void>()>& make) {
  const Key k{owner, int(device.type), device.index, key};
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(k);
    if (it != entries_.end()) {
      if (auto live = it->second.value.lock()) return live;
      entries_.erase(it);
    }
  }
  // Made outside the lock: plans are built one at a time per session, so no one races us.
  admit(bytes);
  std::shared_ptr<const void> made = make();
  forget_expired();
  std::lock_guard<std::mutex> lock(mutex_);
  entries_[k] = Entry{made, bytes};
  return made;
}

void SessionConstants::forget_expired() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = entries_.begin(); it != entries_.end();)
    it = it->second.value.expired() ? entries_.erase(it) : std::next(it);
}

size_t SessionConstants::live_bytes(const Device& device) const {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t total = 0;
  for (const auto& [k, e] : entries_)
    if (std::get<1>(k) == int(device.type) && std::get<2>(k) == device.index &&
        !e.value.expired())
      total += e.bytes;
  return total;
}

}  // namespace minfer
