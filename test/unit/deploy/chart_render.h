// Test support: renders the Helm-style chart in deploy/chart/hybridjob without
// helm. Only the subset of Go templates the chart may use is understood:
//
//   {{ .Values.a.b }}        a scalar of values.yaml, printed as written there
//   {{ .Release.Namespace }} {{ .Release.Name }}
//   {{ if .Values.a.b }} ... {{ end }}   Helm's truthiness, nesting allowed
//
// with `{{-` / `-}}` trimming whitespace on that side, as Go templates do.
// Anything else is reported as an error, so a template that helm would render
// differently (pipelines, functions, else, range, ...) never passes unnoticed.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace hybridjob::testing {

struct ChartRelease {
  std::string name = "hybridjob";
  std::string namespace_name = "hybridjob-system";
  // Dotted paths of values.yaml and the scalar text that replaces them, as
  // `helm --set a.b=text` would.
  std::map<std::string, std::string> set;
};

struct RenderedTemplate {
  std::string text;
  std::vector<std::string> errors;    // each names the line of the action
  std::set<std::string> value_paths;  // every .Values path referenced
};

// values: the parsed values.yaml, before `release.set` is applied.
RenderedTemplate RenderTemplate(const std::string& template_text, const YAML::Node& values,
                                const ChartRelease& release);

// values.yaml with `set` applied; an error string for a path that is not
// there. Returns a deep copy; `values` is not changed.
YAML::Node ApplySet(const YAML::Node& values, const std::map<std::string, std::string>& set,
                    std::vector<std::string>* errors);

// Dotted paths of every scalar (leaf) in values.
std::set<std::string> LeafPaths(const YAML::Node& values);

}  // namespace hybridjob::testing
