// Helpers for maps keyed by std::string with a transparent comparator.
#pragma once

#include <string_view>

namespace hybridjob {

// Erases the entry for `key` and returns whether there was one (std::map's
// erase by a key of another type arrives only in C++23).
template <typename Map>
bool EraseKey(Map& map, std::string_view key) {
  auto it = map.find(key);
  if (it == map.end()) {
    return false;
  }
  map.erase(it);
  return true;
}

}  // namespace hybridjob
