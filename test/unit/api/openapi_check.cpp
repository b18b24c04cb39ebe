#include "openapi_check.h"

#include <regex>
#include <set>

namespace hybridjob::testing {
namespace {

using nlohmann::json;

std::string Join(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

bool Flag(const json& schema, const char* key) {
  return schema.contains(key) && schema[key].is_boolean() && schema[key].get<bool>();
}

bool HasType(const json& value, const std::string& type) {
  if (type == "object") {
    return value.is_object();
  }
  if (type == "array") {
    return value.is_array();
  }
  if (type == "string") {
    return value.is_string();
  }
  if (type == "integer") {
    return value.is_number_integer();
  }
  if (type == "number") {
    return value.is_number();
  }
  if (type == "boolean") {
    return value.is_boolean();
  }
  return false;
}

}  // namespace

std::vector<std::string> SchemaProblems(const json& value, const json& schema,
                                        const std::string& path) {
  std::vector<std::string> problems;
  auto add = [&](const std::string& message) {
    problems.push_back((path.empty() ? "<root>" : path) + ": " + message);
  };
  if (value.is_null()) {
    return problems;  // absent
  }
  if (Flag(schema, "x-kubernetes-int-or-string")) {
    if (!value.is_number_integer() && !value.is_string()) {
      add("must be an integer or a string");
    }
  } else if (schema.contains("type") && !HasType(value, schema["type"].get<std::string>())) {
    add("must be of type " + schema["type"].get<std::string>());
    return problems;
  }
  if (schema.contains("enum") &&
      std::find(schema["enum"].begin(), schema["enum"].end(), value) == schema["enum"].end()) {
    add("unsupported value " + value.dump());
  }
  if (value.is_number()) {
    if (schema.contains("minimum") && value.get<double>() < schema["minimum"].get<double>()) {
      add("below minimum " + schema["minimum"].dump());
    }
    if (schema.contains("maximum") && value.get<double>() > schema["maximum"].get<double>()) {
      add("above maximum " + schema["maximum"].dump());
    }
  }
  if (value.is_string()) {
    const std::string text = value.get<std::string>();
    if (schema.contains("minLength") && text.size() < schema["minLength"].get<size_t>()) {
      add("shorter than " + schema["minLength"].dump());
    }
    if (schema.contains("maxLength") && text.size() > schema["maxLength"].get<size_t>()) {
      add("longer than " + schema["maxLength"].dump());
    }
    if (schema.contains("pattern") &&
        !std::regex_search(text, std::regex(schema["pattern"].get<std::string>()))) {
      add("does not match " + schema["pattern"].get<std::string>());
    }
  }
  if (value.is_object()) {
    if (schema.contains("required")) {
      for (const json& key : schema["required"]) {
        if (!value.contains(key.get<std::string>()) || value[key.get<std::string>()].is_null()) {
          add("missing required field " + key.get<std::string>());
        }
      }
    }
    const json properties = schema.value("properties", json::object());
    for (const auto& [key, item] : value.items()) {
      if (path.empty() && key == "metadata") {
        // ObjectMeta is the API server's; a CRD may only constrain its name.
        if (properties.contains("metadata") && item.is_object() && item.contains("name")) {
          const json name_schema = properties["metadata"]
                                       .value("properties", json::object())
                                       .value("name", json::object());
          for (std::string& problem : SchemaProblems(item["name"], name_schema, "metadata.name")) {
            problems.push_back(std::move(problem));
          }
        }
        continue;
      }
      if (properties.contains(key)) {
        for (std::string& problem : SchemaProblems(item, properties[key], Join(path, key))) {
          problems.push_back(std::move(problem));
        }
      } else if (!Flag(schema, "x-kubernetes-preserve-unknown-fields")) {
        add("unknown field " + key);
      }
    }
  }
  if (value.is_array()) {
    if (schema.contains("minItems") && value.size() < schema["minItems"].get<size_t>()) {
      add("fewer than " + schema["minItems"].dump() + " items");
    }
    if (schema.contains("maxItems") && value.size() > schema["maxItems"].get<size_t>()) {
      add("more than " + schema["maxItems"].dump() + " items");
    }
    const std::string list_type = schema.value("x-kubernetes-list-type", "");
    std::set<std::string> seen;
    for (size_t i = 0; i < value.size(); ++i) {
      const std::string item_path = path + "[" + std::to_string(i) + "]";
      if (schema.contains("items")) {
        for (std::string& problem : SchemaProblems(value[i], schema["items"], item_path)) {
          problems.push_back(std::move(problem));
        }
      }
      std::string key;
      if (list_type == "set") {
        key = value[i].dump();
      } else if (list_type == "map" && value[i].is_object()) {
        for (const json& name : schema["x-kubernetes-list-map-keys"]) {
          key += value[i].value(name.get<std::string>(), json()).dump() + "/";
        }
      }
      if (!key.empty() && !seen.insert(key).second) {
        problems.push_back(item_path + ": duplicate entry " + key);
      }
    }
  }
  return problems;
}

std::vector<std::string> StructuralProblems(const json& schema, const std::string& path) {
  std::vector<std::string> problems;
  auto add = [&](const std::string& message) {
    problems.push_back((path.empty() ? "<root>" : path) + ": " + message);
  };
  const bool int_or_string = Flag(schema, "x-kubernetes-int-or-string");
  const bool preserve = Flag(schema, "x-kubernetes-preserve-unknown-fields");
  if (!schema.contains("type") && !int_or_string && !preserve) {
    add("no type");
  }
  if (schema.contains("anyOf")) {
    json expected = json::array({{{"type", "integer"}}, {{"type", "string"}}});
    if (!int_or_string || schema["anyOf"] != expected) {
      add("anyOf is only allowed as integer-or-string");
    }
    if (schema.contains("type")) {
      add("int-or-string must not set type");
    }
  }
  for (const char* forbidden : {"oneOf", "allOf", "not", "additionalItems", "$ref", "nullable"}) {
    if (schema.contains(forbidden)) {
      add(std::string("uses ") + forbidden);
    }
  }
  if (schema.contains("default")) {
    for (const std::string& problem : SchemaProblems(schema["default"], schema, path)) {
      add("default is invalid: " + problem);
    }
  }
  const std::string type = schema.value("type", "");
  if (type == "array") {
    if (!schema.contains("items")) {
      add("array without items");
    } else {
      const json& items = schema["items"];
      const std::string list_type = schema.value("x-kubernetes-list-type", "atomic");
      if (list_type == "map") {
        if (items.value("type", "") != "object" || !schema.contains("x-kubernetes-list-map-keys")) {
          add("list-type map needs object items and list-map-keys");
        } else {
          for (const json& key : schema["x-kubernetes-list-map-keys"]) {
            const json required = items.value("required", json::array());
            bool is_required = std::find(required.begin(), required.end(), key) != required.end();
            bool has_default = items.contains("properties") &&
                               items["properties"].contains(key.get<std::string>()) &&
                               items["properties"][key.get<std::string>()].contains("default");
            if (!is_required && !has_default) {
              add("list-map key " + key.get<std::string>() + " must be required");
            }
          }
        }
      } else if (list_type == "set") {
        const std::string item_type = items.value("type", "");
        if (item_type == "object" || item_type == "array") {
          add("list-type set needs scalar items");
        }
      }
      for (std::string& problem : StructuralProblems(items, path + "[]")) {
        problems.push_back(std::move(problem));
      }
    }
  }
  if (schema.contains("properties")) {
    if (type != "object") {
      add("properties on a non-object");
    }
    for (const auto& [key, child] : schema["properties"].items()) {
      for (std::string& problem : StructuralProblems(child, Join(path, key))) {
        problems.push_back(std::move(problem));
      }
    }
  }
  return problems;
}

}  // namespace hybridjob::testing
