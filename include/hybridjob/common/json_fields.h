// Typed reads of JSON members with path-qualified errors: the one field reader
// of the project. The API types (json.h), the scheduler's pod and node model
// (scheduler/objects/objects.h) and the controller's view of its pods
// (controller/observed.h) all read through it, so a field of the wrong type is
// reported the same way everywhere ("spec.replicaSpecs[1].minReplicas: must be
// an integer").
//
// In Kubernetes JSON an absent member and a null one both mean "not set"; every
// read here treats them alike and returns "not set" (nullopt, nullptr, empty).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <hybridjob/common/status.h>

namespace hybridjob {

// "a.b" from "a" and "b"; "b" when the path is empty.
std::string JoinPath(std::string_view path, std::string_view key);
// "a[3]".
std::string IndexPath(std::string_view path, size_t index);

// The member `key` of `object`, or nullptr when it is absent or null, or when
// `object` is not an object.
const nlohmann::json* JsonMember(const nlohmann::json& object, std::string_view key);

// A malformed field, thrown by a JsonFields in kFirstErrorThrows mode. Parsers
// that use that mode catch it at their boundary and return a Status.
class JsonFieldError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws JsonFieldError("path: message").
[[noreturn]] void ThrowFieldError(std::string_view path, std::string_view message);

// Runs a parser that gives up at its first bad field (a JsonFields in
// kFirstErrorThrows mode) and turns the throw into InvalidArgument("what: ...").
template <typename T, typename Parse>
Result<T> GuardedParse(std::string_view what, Parse parse) {
  try {
    return parse();
  } catch (const JsonFieldError& error) {
    return InvalidArgument(std::string(what) + ": " + error.what());
  } catch (const nlohmann::json::exception& error) {
    return InvalidArgument(std::string(what) + ": " + error.what());
  }
}

// The value of a nested parse inside such a parser; its error is thrown on
// as is (it already names its field).
template <typename T>
T ValueOrThrowFieldError(Result<T> result) {
  if (!result.ok()) {
    throw JsonFieldError(result.status().message());
  }
  return std::move(result).value();
}

class JsonFields {
 public:
  enum class Mode {
    // Every error is recorded with its path and reading goes on: a user's
    // manifest gets all its mistakes in one answer.
    kCollect,
    // A value of the wrong type reads as "not set", silently: for objects the
    // program only observes and must never refuse (its own pods' status).
    kLenient,
    // The first error throws JsonFieldError: for parsers that give up on an
    // object at its first bad field.
    kFirstErrorThrows,
  };

  explicit JsonFields(Mode mode = Mode::kCollect) : mode_(mode) {}

  // Report members the schema does not define (CheckKnown). The API server
  // prunes them, so objects read from it never have any; manifests on disk
  // might (typos).
  JsonFields& RejectUnknownFields(bool reject) {
    reject_unknown_fields_ = reject;
    return *this;
  }

  void Error(std::string_view path, std::string_view message);
  const std::vector<std::string>& errors() const { return errors_; }
  bool ok() const { return errors_.empty(); }
  // OK, or InvalidArgument with every error, "; "-separated.
  Status ToStatus() const;

  const nlohmann::json* Object(const nlohmann::json& parent, std::string_view key,
                               std::string_view path);
  const nlohmann::json* Array(const nlohmann::json& parent, std::string_view key,
                              std::string_view path);
  std::optional<std::string> String(const nlohmann::json& parent, std::string_view key,
                                    std::string_view path);
  // A Kubernetes quantity, written as a number or a string (int-or-string).
  std::optional<std::string> Quantity(const nlohmann::json& parent, std::string_view key,
                                      std::string_view path);
  std::optional<int64_t> Int64(const nlohmann::json& parent, std::string_view key,
                               std::string_view path);
  std::optional<int32_t> Int32(const nlohmann::json& parent, std::string_view key,
                               std::string_view path);
  std::optional<bool> Bool(const nlohmann::json& parent, std::string_view key,
                           std::string_view path);
  // A list of strings; items of another type are reported and skipped.
  std::vector<std::string> StringList(const nlohmann::json& parent, std::string_view key,
                                      std::string_view path);
  // A map of string to string (labels, annotations); values of another type
  // are reported and skipped.
  std::map<std::string, std::string> StringMap(const nlohmann::json& parent, std::string_view key,
                                               std::string_view path);

  // A string that must be one of a fixed set of spellings; `parse` maps a
  // spelling to the value or nullopt.
  template <typename Enum, typename ParseFn, typename Spellings>
  std::optional<Enum> Enumerated(const nlohmann::json& parent, std::string_view key,
                                 std::string_view path, ParseFn parse, const Spellings& spellings) {
    std::optional<std::string> text = String(parent, key, path);
    if (!text) {
      return std::nullopt;
    }
    std::optional<Enum> value = parse(*text);
    if (!value) {
      std::string one_of;
      for (std::string_view spelling : spellings) {
        one_of += one_of.empty() ? "" : ", ";
        one_of += spelling;
      }
      Error(JoinPath(path, key), "unsupported value \"" + *text + "\": must be one of " + one_of);
    }
    return value;
  }

  // Reports the members of `object` not in `known`, when RejectUnknownFields.
  void CheckKnown(const nlohmann::json& object, std::initializer_list<std::string_view> known,
                  std::string_view path);

 private:
  std::optional<int64_t> Integer(const nlohmann::json& parent, std::string_view key,
                                 std::string_view path, int64_t min, int64_t max,
                                 std::string_view range_message);

  Mode mode_;
  bool reject_unknown_fields_ = false;
  std::vector<std::string> errors_;
};

}  // namespace hybridjob
