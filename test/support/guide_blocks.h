// The runnable blocks of a Markdown guide, so a test can run the guide as a
// reader would and it cannot drift from what the software does.
//
// A fenced code block runs when the line just before its opening fence is a
// marker:
//   <!-- guide-test: run -->     a shell block, run with bash as written;
//   <!-- guide-test: apply -->   a YAML manifest, given to `kubectl apply -f -`;
//   <!-- guide-test: refused --> a YAML manifest that `kubectl apply -f -` must
//                                refuse, printing exactly the block that
//                                follows it (the error the reader is shown).
// Markers are HTML comments, so the rendered guide does not show them. Every
// other block is text for the reader: output, fragments, placeholders.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <hybridjob/common/status.h>

namespace hybridjob::testing {

struct GuideBlock {
  enum class Kind { kRun, kApply, kRefused };
  Kind kind = Kind::kRun;
  int line = 0;  // the opening fence's, 1-based
  std::string text;
  std::string refusal;  // kRefused: kubectl's whole output, as the guide shows it
};

// InvalidArgument for a marker not followed by a fence, a fence left open, an
// apply or refused marker on a block that is not YAML, or a refused manifest
// without the output block after it.
Result<std::vector<GuideBlock>> ExtractGuideBlocks(std::string_view markdown);

// One bash script that runs the blocks in order in one shell, as a reader
// pasting them into a terminal would (what one block exports, the next sees),
// and stops at the first command that fails, naming the block's line in
// `guide_name`.
std::string GuideScript(const std::vector<GuideBlock>& blocks, std::string_view guide_name);

}  // namespace hybridjob::testing
