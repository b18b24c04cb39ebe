// Small string helpers shared by messages across the project.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace hybridjob {

// "a, b, c": `parts` with `separator` between them.
std::string Join(const std::vector<std::string>& parts, std::string_view separator = ", ");

}  // namespace hybridjob
