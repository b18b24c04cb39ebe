#include "guide_blocks.h"

#include <utility>

namespace hybridjob::testing {
namespace {

constexpr std::string_view kRunMarker = "<!-- guide-test: run -->";
constexpr std::string_view kApplyMarker = "<!-- guide-test: apply -->";
constexpr std::string_view kRefusedMarker = "<!-- guide-test: refused -->";

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

// The fenced block whose opening fence is lines[open]: its text without the
// fence's indentation, and the index of its closing fence.
Result<size_t> ReadFencedBlock(const std::vector<std::string_view>& lines, size_t open,
                               std::string* text) {
  size_t indent = 0;
  std::string_view info;
  IsFence(lines[open], &indent, &info);
  for (size_t j = open + 1; j < lines.size(); ++j) {
    size_t close_indent = 0;
    std::string_view close_info;
    if (IsFence(lines[j], &close_indent, &close_info) && close_info.empty()) {
      return j;
    }
    std::string_view line = lines[j];
    size_t strip = 0;
    while (strip < indent && strip < line.size() && line[strip] == ' ') {
      ++strip;
    }
    text->append(line.substr(strip));
    text->push_back('\n');
  }
  return InvalidArgument("line " + std::to_string(open + 1) + ": the code fence is not closed");
}

}  // namespace

Result<std::vector<GuideBlock>> ExtractGuideBlocks(std::string_view markdown) {
  const std::vector<std::string_view> lines = Lines(markdown);
  std::vector<GuideBlock> blocks;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string_view marker = Trimmed(lines[i]);
    GuideBlock block;
    if (marker == kRunMarker) {
      block.kind = GuideBlock::Kind::kRun;
    } else if (marker == kApplyMarker) {
      block.kind = GuideBlock::Kind::kApply;
    } else if (marker == kRefusedMarker) {
      block.kind = GuideBlock::Kind::kRefused;
    } else {
      continue;
    }
    const int marker_line = static_cast<int>(i) + 1;
    size_t indent = 0;
    std::string_view info;
    if (i + 1 >= lines.size() || !IsFence(lines[i + 1], &indent, &info)) {
      return InvalidArgument("line " + std::to_string(marker_line) +
                             ": a guide-test marker must be followed by a code fence");
    }
    block.line = marker_line + 1;
    if (block.kind != GuideBlock::Kind::kRun && info != "yaml") {
      return InvalidArgument("line " + std::to_string(block.line) + ": " +
                             (block.kind == GuideBlock::Kind::kApply ? "an apply" : "a refused") +
                             " block must be a yaml block, not \"" + std::string(info) + "\"");
    }
    Result<size_t> close = ReadFencedBlock(lines, i + 1, &block.text);
    if (!close.ok()) {
      return close.status();
    }
    i = *close;
    if (block.kind == GuideBlock::Kind::kRefused) {
      // The refusal the reader is shown: the next block, after blank lines.
      size_t next = i + 1;
      while (next < lines.size() && Trimmed(lines[next]).empty()) {
        ++next;
      }
      size_t output_indent = 0;
      std::string_view output_info;
      if (next >= lines.size() || !IsFence(lines[next], &output_indent, &output_info)) {
        return InvalidArgument("line " + std::to_string(block.line) +
                               ": a refused manifest must be followed by the block of what "
                               "kubectl prints");
      }
      Result<size_t> output_close = ReadFencedBlock(lines, next, &block.refusal);
      if (!output_close.ok()) {
        return output_close.status();
      }
      i = *output_close;
    }
    blocks.push_back(std::move(block));
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
    // Quoted delimiters: manifests and outputs go as written.
    switch (block.kind) {
      case GuideBlock::Kind::kRun:
        script += block.text;
        break;
      case GuideBlock::Kind::kApply:
        script +=
            "kubectl apply -f - <<'GUIDE_MANIFEST_END'\n" + block.text + "GUIDE_MANIFEST_END\n";
        break;
      case GuideBlock::Kind::kRefused:
        script += "if guide_output=$(kubectl apply -f - 2>&1 <<'GUIDE_MANIFEST_END'\n" +
                  block.text +
                  "GUIDE_MANIFEST_END\n"
                  "); then\n"
                  "  echo \"guide: kubectl applied the manifest it should refuse:\" >&2\n"
                  "  printf '%s\\n' \"$guide_output\" >&2\n"
                  "  false\n"
                  "fi\n"
                  "diff -u --label 'the guide shows' --label 'kubectl printed' - "
                  "<(printf '%s\\n' \"$guide_output\") <<'GUIDE_OUTPUT_END'\n" +
                  block.refusal + "GUIDE_OUTPUT_END\n";
        break;
    }
  }
  return script;
}

}  // namespace hybridjob::testing
