// Small string helpers shared by messages across the project.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace hybridjob {

// "a, b, c": `parts` with `separator` between them.
std::string Join(const std::vector<std::string>& parts, std::string_view separator = ", ");

// The parts of `text` between separators, empty ones included ("a,,b" has
// three, "" has one). They point into `text`.
std::vector<std::string_view> Split(std::string_view text, char separator);

}  // namespace hybridjob
