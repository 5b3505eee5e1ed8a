// The session's store of what kernels derive from constant inputs (packed weights) and of
// constants uploaded to a device: one copy per session and device, shared by the plans of
// every input shape. Entries are held by the plans (weakly here), so evicting the last plan
// that uses an entry frees it.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

#include "minfer/kernel.h"

namespace minfer {

class SessionConstants {
 public:
  // The live entry of (owner, device, key), else the one `make` returns, counted as `bytes`.
  // `admit(bytes)` runs first, only when a new entry is to be made; it throws to refuse.
  std::shared_ptr<const void> find_or_make(
      const void* owner, const Device& device, const std::string& key, size_t bytes,
      const std::function<void(size_t)>& admit,
      const std::function<std::shared_ptr<const void>()>& make);
  size_t live_bytes(const Device& device) const;  // of the entries some plan still holds
  void forget_expired();  // drops the bookkeeping of entries no plan holds any more

 private:
  struct Entry {
    std::weak_ptr<const void> value;
    size_t bytes = 0;
  };
  using Key = std::tuple<const void*, int, int, std::string>;  // owner, device type, index, key
  mutable std::mutex mutex_;
  std::map<Key, Entry> entries_;
};

}  // namespace minfer
