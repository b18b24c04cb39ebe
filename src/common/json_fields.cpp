#include <limits>

#include <hybridjob/common/json_fields.h>

namespace hybridjob {

using nlohmann::json;

std::string JoinPath(std::string_view path, std::string_view key) {
  std::string out;
  out.reserve(path.size() + 1 + key.size());
  out.append(path);
  if (!out.empty()) {
    out += '.';
  }
  out.append(key);
  return out;
}

std::string IndexPath(std::string_view path, size_t index) {
  std::string out(path);
  out += '[';
  out += std::to_string(index);
  out += ']';
  return out;
}

const json* JsonMember(const json& object, std::string_view key) {
  if (!object.is_object()) {
    return nullptr;
  }
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) {
    return nullptr;
  }
  return &*it;
}

void ThrowFieldError(std::string_view path, std::string_view message) {
  std::string what(path);
  what += ": ";
  what.append(message);
  throw JsonFieldError(what);
}

void JsonFields::Error(std::string_view path, std::string_view message) {
  switch (mode_) {
    case Mode::kCollect: {
      std::string error(path);
      error += ": ";
      error.append(message);
      errors_.push_back(std::move(error));
      return;
    }
    case Mode::kLenient:
      return;
    case Mode::kFirstErrorThrows:
      ThrowFieldError(path, message);
  }
}

Status JsonFields::ToStatus() const {
  if (errors_.empty()) {
    return Status::Ok();
  }
  std::string message;
  for (const std::string& error : errors_) {
    message += message.empty() ? "" : "; ";
    message += error;
  }
  return InvalidArgument(message);
}

const json* JsonFields::Object(const json& parent, std::string_view key, std::string_view path) {
  const json* value = JsonMember(parent, key);
  if (value != nullptr && !value->is_object()) {
    Error(JoinPath(path, key), "must be an object");
    return nullptr;
  }
  return value;
}

const json* JsonFields::Array(const json& parent, std::string_view key, std::string_view path) {
  const json* value = JsonMember(parent, key);
  if (value != nullptr && !value->is_array()) {
    Error(JoinPath(path, key), "must be a list");
    return nullptr;
  }
  return value;
}

std::optional<std::string> JsonFields::String(const json& parent, std::string_view key,
                                              std::string_view path) {
  const json* value = JsonMember(parent, key);
  if (value == nullptr) {
    return std::nullopt;
  }
  if (!value->is_string()) {
    Error(JoinPath(path, key), "must be a string");
    return std::nullopt;
  }
  return value->get<std::string>();
}

std::optional<std::string> JsonFields::Quantity(const json& parent, std::string_view key,
                                                std::string_view path) {
  const json* value = JsonMember(parent, key);
  if (value == nullptr) {
    return std::nullopt;
  }
  if (value->is_number_integer()) {
    return value->dump();
  }
  if (!value->is_string()) {
    Error(JoinPath(path, key), "must be a quantity such as \"10Gi\"");
    return std::nullopt;
  }
  return value->get<std::string>();
}

std::optional<int64_t> JsonFields::Int64(const json& parent, std::string_view key,
                                         std::string_view path) {
  return Integer(parent, key, path, std::numeric_limits<int64_t>::min(),
                 std::numeric_limits<int64_t>::max(), "must be an integer");
}

std::optional<int32_t> JsonFields::Int32(const json& parent, std::string_view key,
                                         std::string_view path) {
  std::optional<int64_t> value =
      Integer(parent, key, path, std::numeric_limits<int32_t>::min(),
              std::numeric_limits<int32_t>::max(), "must be a 32-bit integer");
  if (!value) {
    return std::nullopt;
  }
  return static_cast<int32_t>(*value);
}

std::optional<bool> JsonFields::Bool(const json& parent, std::string_view key,
                                     std::string_view path) {
  const json* value = JsonMember(parent, key);
  if (value == nullptr) {
    return std::nullopt;
  }
  if (!value->is_boolean()) {
    Error(JoinPath(path, key), "must be a boolean");
    return std::nullopt;
  }
  return value->get<bool>();
}

std::vector<std::string> JsonFields::StringList(const json& parent, std::string_view key,
                                                std::string_view path) {
  std::vector<std::string> out;
  const json* list = Array(parent, key, path);
  if (list == nullptr) {
    return out;
  }
  out.reserve(list->size());
  for (size_t i = 0; i < list->size(); ++i) {
    const json& item = (*list)[i];
    if (!item.is_string()) {
      Error(IndexPath(JoinPath(path, key), i), "must be a string");
      continue;
    }
    out.push_back(item.get<std::string>());
  }
  return out;
}

std::map<std::string, std::string> JsonFields::StringMap(const json& parent, std::string_view key,
                                                         std::string_view path) {
  std::map<std::string, std::string> out;
  const json* map = Object(parent, key, path);
  if (map == nullptr) {
    return out;
  }
  for (const auto& [name, value] : map->items()) {
    if (!value.is_string()) {
      Error(JoinPath(JoinPath(path, key), name), "must be a string");
      continue;
    }
    out.emplace(name, value.get<std::string>());
  }
  return out;
}

void JsonFields::CheckKnown(const json& object, std::initializer_list<std::string_view> known,
                            std::string_view path) {
  if (!reject_unknown_fields_ || !object.is_object()) {
    return;
  }
  for (const auto& item : object.items()) {
    bool found = false;
    for (std::string_view key : known) {
      found = found || item.key() == key;
    }
    if (!found) {
      Error(JoinPath(path, item.key()), "unknown field");
    }
  }
}

std::optional<int64_t> JsonFields::Integer(const json& parent, std::string_view key,
                                           std::string_view path, int64_t min, int64_t max,
                                           std::string_view range_message) {
  const json* value = JsonMember(parent, key);
  if (value == nullptr) {
    return std::nullopt;
  }
  if (value->is_number_unsigned()) {
    uint64_t number = value->get<uint64_t>();
    if (number > static_cast<uint64_t>(max)) {
      Error(JoinPath(path, key), range_message);
      return std::nullopt;
    }
    return static_cast<int64_t>(number);
  }
  if (!value->is_number_integer()) {
    Error(JoinPath(path, key), "must be an integer");
    return std::nullopt;
  }
  int64_t number = value->get<int64_t>();
  if (number < min || number > max) {
    Error(JoinPath(path, key), range_message);
    return std::nullopt;
  }
  return number;
}

}  // namespace hybridjob
