#include "chart_render.h"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace hybridjob::testing {
namespace {

std::vector<std::string> SplitPath(const std::string& path) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(path);
  while (std::getline(in, part, '.')) {
    parts.push_back(part);
  }
  return parts;
}

// The node at a dotted path, or an invalid node. Never inserts.
YAML::Node Lookup(const YAML::Node& root, const std::string& path) {
  // YAML::Node's operator= assigns through to the referenced node; reset()
  // rebinds the handle.
  YAML::Node current;
  current.reset(root);
  for (const std::string& part : SplitPath(path)) {
    if (!current.IsMap()) {
      return YAML::Node(YAML::NodeType::Undefined);
    }
    const YAML::Node& const_current = current;
    const YAML::Node next = const_current[part];
    if (!next.IsDefined()) {
      return YAML::Node(YAML::NodeType::Undefined);
    }
    current.reset(next);
  }
  return current;
}

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

bool IsIdentifierPath(const std::string& text) {
  if (text.empty() || text.front() == '.' || text.back() == '.') {
    return false;
  }
  for (char c : text) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.')) {
      return false;
    }
  }
  return text.find("..") == std::string::npos;
}

// Helm's truthiness: false, 0, "", null and empty collections are false.
bool Truthy(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return false;
    case YAML::NodeType::Sequence:
    case YAML::NodeType::Map:
      return node.size() > 0;
    case YAML::NodeType::Scalar: {
      const std::string& text = node.Scalar();
      if (node.Tag() != "?") {
        return !text.empty();  // a quoted string
      }
      if (text.empty() || text == "false" || text == "False" || text == "FALSE" || text == "~" ||
          text == "null") {
        return false;
      }
      try {
        size_t used = 0;
        const double number = std::stod(text, &used);
        if (used == text.size()) {
          return number != 0;
        }
      } catch (const std::exception&) {
      }
      return true;
    }
  }
  return false;
}

struct Piece {
  bool is_action = false;
  std::string text;  // literal text, or the action without braces and trim markers
  int line = 0;
};

void CollectLeaves(const YAML::Node& node, const std::string& prefix, std::set<std::string>* out) {
  if (node.IsMap()) {
    for (const auto& entry : node) {
      const std::string key = entry.first.as<std::string>();
      CollectLeaves(entry.second, prefix.empty() ? key : prefix + "." + key, out);
    }
    return;
  }
  out->insert(prefix);
}

}  // namespace

YAML::Node ApplySet(const YAML::Node& values, const std::map<std::string, std::string>& set,
                    std::vector<std::string>* errors) {
  YAML::Node copy = YAML::Clone(values);
  for (const auto& [path, text] : set) {
    if (!Lookup(copy, path).IsDefined()) {
      errors->push_back("--set " + path + ": not in values.yaml");
      continue;
    }
    const std::vector<std::string> parts = SplitPath(path);
    YAML::Node current;
    current.reset(copy);
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      current.reset(current[parts[i]]);
    }
    current[parts.back()] = YAML::Load(text);
  }
  return copy;
}

std::set<std::string> LeafPaths(const YAML::Node& values) {
  std::set<std::string> out;
  CollectLeaves(values, "", &out);
  return out;
}

RenderedTemplate RenderTemplate(const std::string& template_text, const YAML::Node& defaults,
                                const ChartRelease& release) {
  RenderedTemplate result;
  const YAML::Node values = ApplySet(defaults, release.set, &result.errors);

  // Split into text and actions, applying the trim markers as Go's parser does.
  std::vector<Piece> pieces;
  size_t position = 0;
  bool trim_next = false;
  while (true) {
    const size_t open = template_text.find("{{", position);
    std::string text = template_text.substr(
        position, open == std::string::npos ? std::string::npos : open - position);
    if (trim_next) {
      size_t first = 0;
      while (first < text.size() && IsSpace(text[first])) {
        ++first;
      }
      text.erase(0, first);
    }
    if (open == std::string::npos) {
      pieces.push_back({false, text, 0});
      break;
    }
    const int line =
        1 + static_cast<int>(std::count(template_text.begin(),
                                        template_text.begin() + static_cast<long>(open), '\n'));
    const size_t close = template_text.find("}}", open + 2);
    if (close == std::string::npos) {
      result.errors.push_back("line " + std::to_string(line) + ": \"{{\" is never closed");
      pieces.push_back({false, text, 0});
      break;
    }
    std::string inner = template_text.substr(open + 2, close - open - 2);
    const bool trim_left = inner.size() >= 2 && inner[0] == '-' && IsSpace(inner[1]);
    trim_next = inner.size() >= 2 && inner.back() == '-' && IsSpace(inner[inner.size() - 2]);
    if (trim_left) {
      inner.erase(0, 1);
      while (!text.empty() && IsSpace(text.back())) {
        text.pop_back();
      }
    }
    if (trim_next) {
      inner.pop_back();
    }
    position = close + 2;
    size_t begin = 0;
    size_t end = inner.size();
    while (begin < end && IsSpace(inner[begin])) {
      ++begin;
    }
    while (end > begin && IsSpace(inner[end - 1])) {
      --end;
    }
    pieces.push_back({false, text, 0});
    pieces.push_back({true, inner.substr(begin, end - begin), line});
  }

  // Evaluate.
  std::vector<bool> conditions;  // one per open `if`
  auto active = [&conditions] {
    for (bool condition : conditions) {
      if (!condition) {
        return false;
      }
    }
    return true;
  };
  auto value_of = [&](const std::string& path, int at, YAML::Node* out) {
    const std::string relative = path.substr(std::string(".Values.").size());
    result.value_paths.insert(relative);
    YAML::Node node = Lookup(values, relative);
    if (!node.IsDefined()) {
      result.errors.push_back("line " + std::to_string(at) + ": " + path +
                              " is not in values.yaml");
      return false;
    }
    *out = node;
    return true;
  };
  for (const Piece& piece : pieces) {
    if (!piece.is_action) {
      if (active()) {
        result.text += piece.text;
      }
      continue;
    }
    const std::string& action = piece.text;
    const std::string where = "line " + std::to_string(piece.line) + ": ";
    if (action == "end") {
      if (conditions.empty()) {
        result.errors.push_back(where + "{{ end }} without {{ if }}");
      } else {
        conditions.pop_back();
      }
    } else if (action.rfind("if ", 0) == 0) {
      std::string path = action.substr(3);
      while (!path.empty() && IsSpace(path.front())) {
        path.erase(0, 1);
      }
      if (path.rfind(".Values.", 0) != 0 || !IsIdentifierPath(path.substr(1))) {
        result.errors.push_back(where + "unsupported condition \"" + action +
                                "\" (only `if .Values.x.y`)");
        conditions.push_back(false);
        continue;
      }
      YAML::Node node;
      conditions.push_back(value_of(path, piece.line, &node) && Truthy(node));
    } else if (action == ".Release.Namespace") {
      if (active()) {
        result.text += release.namespace_name;
      }
    } else if (action == ".Release.Name") {
      if (active()) {
        result.text += release.name;
      }
    } else if (action.rfind(".Values.", 0) == 0 && IsIdentifierPath(action.substr(1))) {
      YAML::Node node;
      if (!value_of(action, piece.line, &node)) {
        continue;
      }
      if (!node.IsScalar()) {
        result.errors.push_back(where + action +
                                " is not a single value: helm would print it in Go syntax");
        continue;
      }
      if (active()) {
        result.text += node.Scalar();
      }
    } else {
      result.errors.push_back(where + "unsupported template action \"{{ " + action + " }}\"");
    }
  }
  if (!conditions.empty()) {
    result.errors.push_back("an {{ if }} is never closed with {{ end }}");
  }
  return result;
}

}  // namespace hybridjob::testing
