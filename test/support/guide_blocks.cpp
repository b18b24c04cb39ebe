#include "guide_blocks.h"

#include <utility>

namespace hybridjob::testing {
namespace {

constexpr std::string_view kRunMarker = "<!-- guide-test: run -->";
constexpr std::string_view kApplyMarker = "<!-- guide-test: apply -->";

std::string_view Trimmed(std::string_view line) {
  while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) {
    line.remove_prefix(1);
  }
  while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r')) {
    line.remove_suffix(1);
  }
  return line;
}

std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    lines.push_back(text.substr(0, end));
    if (end == std::string_view::npos) {
      break;
    }
    text.remove_prefix(end + 1);
  }
  return lines;
}

// A fence line: three or more backticks, then an info string. The fence's
// indentation is removed from the block's lines (a block in a list item).
bool IsFence(std::string_view line, size_t* indent, std::string_view* info) {
  size_t spaces = 0;
  while (spaces < line.size() && line[spaces] == ' ') {
    ++spaces;
  }
  std::string_view rest = line.substr(spaces);
  if (rest.substr(0, 3) != "```") {
    return false;
  }
  *indent = spaces;
  *info = Trimmed(rest.substr(rest.find_first_not_of('`') == std::string_view::npos
                                  ? rest.size()
                                  : rest.find_first_not_of('`')));
  return true;
}

}  // namespace

Result<std::vector<GuideBlock>> ExtractGuideBlocks(std::string_view markdown) {
  const std::vector<std::string_view> lines = Lines(markdown);
  std::vector<GuideBlock> blocks;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string_view marker = Trimmed(lines[i]);
    const bool run = marker == kRunMarker;
    if (!run && marker != kApplyMarker) {
      continue;
    }
    const int marker_line = static_cast<int>(i) + 1;
    size_t indent = 0;
    std::string_view info;
    if (i + 1 >= lines.size() || !IsFence(lines[i + 1], &indent, &info)) {
      return InvalidArgument("line " + std::to_string(marker_line) +
                             ": a guide-test marker must be followed by a code fence");
    }
    GuideBlock block;
    block.kind = run ? GuideBlock::Kind::kRun : GuideBlock::Kind::kApply;
    block.line = marker_line + 1;
    if (!run && info != "yaml") {
      return InvalidArgument("line " + std::to_string(block.line) +
                             ": an apply block must be a yaml block, not \"" + std::string(info) +
                             "\"");
    }
    size_t j = i + 2;
    bool closed = false;
    for (; j < lines.size(); ++j) {
      size_t close_indent = 0;
      std::string_view close_info;
      if (IsFence(lines[j], &close_indent, &close_info) && close_info.empty()) {
        closed = true;
        break;
      }
      std::string_view text = lines[j];
      size_t strip = 0;
      while (strip < indent && strip < text.size() && text[strip] == ' ') {
        ++strip;
      }
      block.text.append(text.substr(strip));
      block.text.push_back('\n');
    }
    if (!closed) {
      return InvalidArgument("line " + std::to_string(block.line) +
                             ": the code fence is not closed");
    }
    blocks.push_back(std::move(block));
    i = j;
  }
  return blocks;
}

std::string GuideScript(const std::vector<GuideBlock>& blocks, std::string_view guide_name) {
  std::string script =
      "set -euo pipefail\n"
      "guide_block=''\n"
      "trap 'echo \"guide: the block at " +
      std::string(guide_name) + ":$guide_block failed (exit $?)\" >&2' ERR\n";
  for (const GuideBlock& block : blocks) {
    const std::string line = std::to_string(block.line);
    script += "guide_block=" + line + "\n";
    script +=
        "echo \"guide: running the block at " + std::string(guide_name) + ":" + line + "\" >&2\n";
    if (block.kind == GuideBlock::Kind::kRun) {
      script += block.text;
    } else {
      // A quoted delimiter: the manifest goes to kubectl as written.
      script += "kubectl apply -f - <<'GUIDE_MANIFEST_END'\n" + block.text + "GUIDE_MANIFEST_END\n";
    }
  }
  return script;
}

}  // namespace hybridjob::testing
