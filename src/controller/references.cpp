#include <algorithm>
#include <utility>

#include <hybridjob/common/json_fields.h>
#include <hybridjob/controller/references.h>

namespace hybridjob::controller {
namespace {

using nlohmann::json;

// Templates are the user's and not all of their fields are checked by the
// schema: a member of another type reads as unset.
JsonFields Lenient() {
  return JsonFields(JsonFields::Mode::kLenient);
}

bool Optional(const json& source) {
  return Lenient().Bool(source, "optional", "").value_or(false);
}

std::string NameIn(const json& source, const char* field) {
  return Lenient().String(source, field, "").value_or("");
}

class Collector {
 public:
  void Add(const json& source, const char* name_field, const std::string& used_by) {
    if (!source.is_object() || Optional(source)) {
      return;
    }
    std::string name = NameIn(source, name_field);
    if (name.empty()) {
      return;
    }
    const bool known = std::any_of(out_.begin(), out_.end(), [&](const RequiredConfigMap& known) {
      return known.name == name;
    });
    if (!known) {
      out_.push_back({std::move(name), used_by});
    }
  }

  std::vector<RequiredConfigMap> Take() { return std::move(out_); }

 private:
  std::vector<RequiredConfigMap> out_;
};

const json& Field(const json& object, const char* name) {
  static const json kNull;
  const json* member = JsonMember(object, name);
  return member != nullptr ? *member : kNull;
}

void CollectVolumes(const json& spec, const std::string& role, Collector& collector) {
  const json& volumes = Field(spec, "volumes");
  if (!volumes.is_array()) {
    return;
  }
  for (const json& volume : volumes) {
    const std::string used_by = "volume \"" + NameIn(volume, "name") + "\" of role " + role;
    collector.Add(Field(volume, "configMap"), "name", used_by);
    const json& sources = Field(Field(volume, "projected"), "sources");
    if (sources.is_array()) {
      for (const json& source : sources) {
        collector.Add(Field(source, "configMap"), "name", used_by);
      }
    }
  }
}

void CollectEnvironment(const json& spec, const std::string& role, Collector& collector) {
  for (const char* list : {"initContainers", "containers"}) {
    const json& containers = Field(spec, list);
    if (!containers.is_array()) {
      continue;
    }
    for (const json& container : containers) {
      const std::string used_by =
          "environment of container \"" + NameIn(container, "name") + "\" of role " + role;
      const json& env_from = Field(container, "envFrom");
      if (env_from.is_array()) {
        for (const json& source : env_from) {
          collector.Add(Field(source, "configMapRef"), "name", used_by);
        }
      }
      const json& env = Field(container, "env");
      if (env.is_array()) {
        for (const json& variable : env) {
          const json& from = Field(variable, "valueFrom");
          collector.Add(Field(from, "configMapKeyRef"), "name", used_by);
        }
      }
    }
  }
}

}  // namespace

std::vector<RequiredConfigMap> RequiredConfigMaps(const api::HybridJob& job) {
  Collector collector;
  for (const api::ReplicaSpec& role : job.spec.replica_specs) {
    const json& spec = Field(role.pod_template, "spec");
    CollectVolumes(spec, role.name, collector);
    CollectEnvironment(spec, role.name, collector);
  }
  return collector.Take();
}

std::string Describe(const RequiredConfigMap& config_map) {
  return "ConfigMap \"" + config_map.name + "\" (" + config_map.used_by + ")";
}

}  // namespace hybridjob::controller
