#include "yaml_json.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

#include <yaml-cpp/yaml.h>

namespace hybridjob::testing {
namespace {

using nlohmann::json;

bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}

// [-+]?[0-9]+
bool IsInteger(const std::string& text) {
  size_t i = (!text.empty() && (text[0] == '-' || text[0] == '+')) ? 1 : 0;
  if (i == text.size()) {
    return false;
  }
  for (; i < text.size(); ++i) {
    if (!IsDigit(text[i])) {
      return false;
    }
  }
  return true;
}

// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
bool IsFloat(const std::string& text) {
  size_t i = (!text.empty() && (text[0] == '-' || text[0] == '+')) ? 1 : 0;
  size_t digits = 0;
  while (i < text.size() && IsDigit(text[i])) {
    ++i;
    ++digits;
  }
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && IsDigit(text[i])) {
      ++i;
      ++digits;
    }
  }
  if (digits == 0) {
    return false;
  }
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '-' || text[i] == '+')) {
      ++i;
    }
    size_t exponent_digits = 0;
    while (i < text.size() && IsDigit(text[i])) {
      ++i;
      ++exponent_digits;
    }
    if (exponent_digits == 0) {
      return false;
    }
  }
  return i == text.size();
}

json ScalarToJson(const YAML::Node& node) {
  const std::string& text = node.Scalar();
  if (node.Tag() != "?") {
    return text;  // quoted or block scalar
  }
  if (text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL") {
    return nullptr;
  }
  if (text == "true" || text == "True" || text == "TRUE") {
    return true;
  }
  if (text == "false" || text == "False" || text == "FALSE") {
    return false;
  }
  if (IsInteger(text)) {
    try {
      return std::stoll(text);
    } catch (const std::out_of_range&) {
      return text;
    }
  }
  if (IsFloat(text)) {
    return std::stod(text);
  }
  return text;
}

json NodeToJson(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
    case YAML::NodeType::Scalar:
      return ScalarToJson(node);
    case YAML::NodeType::Sequence: {
      json out = json::array();
      for (const YAML::Node& item : node) {
        out.push_back(NodeToJson(item));
      }
      return out;
    }
    case YAML::NodeType::Map: {
      json out = json::object();
      for (const auto& item : node) {
        out[item.first.as<std::string>()] = NodeToJson(item.second);
      }
      return out;
    }
  }
  return nullptr;
}

}  // namespace

json YamlToJson(const std::string& text) {
  return NodeToJson(YAML::Load(text));
}

std::vector<json> YamlDocumentsToJson(const std::string& text) {
  std::vector<json> out;
  for (const YAML::Node& document : YAML::LoadAll(text)) {
    out.push_back(NodeToJson(document));
  }
  return out;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw std::runtime_error("cannot read " + path);
  }
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string SourcePath(const std::string& relative) {
  return std::string(HYBRIDJOB_SOURCE_DIR) + "/" + relative;
}

}  // namespace hybridjob::testing
