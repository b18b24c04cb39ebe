// Kubernetes resource quantities ("100m", "1.5", "16Gi", "1e3", "2M") as exact integers.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <hybridjob/common/status.h>

namespace hybridjob {

// Parses a quantity into whole units (bytes, GPUs, pods). A fractional value is
// rounded up, away from zero, as resource.Quantity.Value() does, so a request is
// never under-counted: "1m" -> 1, "1.5" -> 2, "0.5Ki" -> 512.
// Errors: empty or malformed text, unknown suffix, value outside int64.
Result<int64_t> ParseQuantity(std::string_view text);

// Parses a quantity into thousandths of a unit (millicores): "100m" -> 100,
// "2" -> 2000, "0.0001" -> 1 (rounded up like resource.Quantity.MilliValue()).
Result<int64_t> ParseQuantityMilli(std::string_view text);

// "1500m" for 1500, "2" for 2000: the shortest exact form of a milli value.
std::string FormatMilliQuantity(int64_t milli);

// "16Gi" for 17179869184, "1000" for 1000: a binary suffix when it is exact.
std::string FormatBinaryQuantity(int64_t value);

}  // namespace hybridjob
