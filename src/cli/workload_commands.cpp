// kubectl hybridjob serve and notebook: read what the objects depend on,
// build them (workloads.cpp), create or print them as kubectl create does.
#include <random>
#include <string>
#include <vector>

#include <hybridjob/api/json.h>
#include <hybridjob/api/names.h>
#include <hybridjob/cli/workloads.h>
#include <hybridjob/controller/children.h>
#include <hybridjob/k8s/api_status.h>
#include <hybridjob/k8s/resource.h>

namespace hybridjob::cli {
namespace {

using nlohmann::json;

Result<api::HybridJob> ReadJob(k8s::ApiClient& client, const std::string& name,
                               const std::string& ns) {
  Result<json> object = client.Get(k8s::resources::HybridJobs(), ns, name);
  if (!object.ok()) {
    if (k8s::IsNotFound(object.status())) {
      return NotFound("no HybridJob \"" + name + "\" in namespace " + ns);
    }
    return Status(object.status().code(),
                  "cannot read HybridJob " + ns + "/" + name + ": " + object.status().message());
  }
  Result<api::HybridJob> job = api::ParseHybridJob(*object);
  if (!job.ok()) {
    return Status(job.status().code(),
                  "HybridJob " + ns + "/" + name + " does not parse: " + job.status().message());
  }
  return job;
}

// Where pods mounting `volume` can run. A PersistentVolume the caller may not
// read (it is cluster-wide) only leaves the node unsaid.
Result<ClaimPlacement> ReadPlacement(k8s::ApiClient& client, const api::HybridJob& job,
                                     const api::VolumeSpec& volume, const std::string& ns,
                                     std::vector<std::string>* notes) {
  const std::string claim_name = controller::ClaimName(job, volume);
  Result<json> claim = client.Get(k8s::resources::PersistentVolumeClaims(), ns, claim_name);
  if (!claim.ok() && !k8s::IsNotFound(claim.status())) {
    return Status(claim.status().code(), "cannot read PersistentVolumeClaim " + ns + "/" +
                                             claim_name + ": " + claim.status().message());
  }
  json persistent_volume;
  const std::string volume_name =
      claim.ok() ? (*claim)["spec"].value("volumeName", std::string()) : std::string();
  if (!volume_name.empty()) {
    Result<json> pv = client.Get(k8s::resources::PersistentVolumes(), "", volume_name);
    if (pv.ok()) {
      persistent_volume = std::move(*pv);
    } else {
      notes->push_back("cannot read PersistentVolume " + volume_name +
                       " to tell which node it is on: " + pv.status().message());
    }
  }
  return PlaceClaim(job, volume, claim.ok() ? *claim : json(), persistent_volume);
}

std::string KindPath(const json& object) {
  const std::string api_version = object.value("apiVersion", "");
  const std::string kind = object.value("kind", "");
  std::string lower;
  for (char c : kind) {
    lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  const size_t slash = api_version.find('/');
  const std::string group = slash == std::string::npos ? "" : api_version.substr(0, slash);
  return lower + (group.empty() ? "" : "." + group) + "/" + object["metadata"].value("name", "");
}

k8s::Resource ResourceOf(const json& object) {
  const std::string api_version = object.value("apiVersion", "");
  const std::string kind = object.value("kind", "");
  const size_t slash = api_version.find('/');
  const std::string group = slash == std::string::npos ? "" : api_version.substr(0, slash);
  const std::string version =
      slash == std::string::npos ? api_version : api_version.substr(slash + 1);
  const std::string plural = kind == "Deployment"                ? "deployments"
                             : kind == "Service"                 ? "services"
                             : kind == "Secret"                  ? "secrets"
                             : kind == "HorizontalPodAutoscaler" ? "horizontalpodautoscalers"
                                                                 : "";
  return {group, version, plural, true};
}

// Creates the objects in order (or not, in a dry run) and prints them as
// kubectl create does. The first refusal stops it, naming what was made.
Status WriteObjects(k8s::ApiClient& client, const std::vector<json>& objects,
                    const WriteOptions& write, std::ostream& out) {
  std::vector<json> written;
  std::vector<std::string> created;
  for (const json& object : objects) {
    if (write.dry_run) {
      written.push_back(object);
      continue;
    }
    Result<json> result = client.Create(ResourceOf(object), write.namespace_name, object);
    if (!result.ok()) {
      std::string made;
      for (const std::string& path : created) {
        made += (made.empty() ? "" : ", ") + path;
      }
      return Status(result.status().code(),
                    "cannot create " + KindPath(object) + " in namespace " + write.namespace_name +
                        ": " + result.status().message() +
                        (made.empty() ? "" : " (created before it: " + made + ")"));
    }
    created.push_back(KindPath(object));
    written.push_back(std::move(*result));
  }
  if (write.output == "json" || write.output == "yaml") {
    const json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", written}};
    out << FormatData(list, write.output == "json" ? OutputFormat::kJson : OutputFormat::kYaml);
  } else {
    for (const json& object : written) {
      out << KindPath(object)
          << (write.output == "name" ? ""
              : write.dry_run        ? " created (dry run)"
                                     : " created")
          << "\n";
    }
  }
  out.flush();
  return Status::Ok();
}

std::string NewToken() {
  std::random_device random;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token;
  for (int i = 0; i < 48; ++i) {
    token += kHex[random() % 16];
  }
  return token;
}

}  // namespace

Result<WriteOptions> ParseWriteOptions(const std::string& namespace_name, const std::string& output,
                                       const std::string& dry_run) {
  WriteOptions write;
  write.namespace_name = namespace_name;
  if (!output.empty() && output != "name" && output != "json" && output != "yaml") {
    return InvalidArgument("--output: unknown format \"" + output +
                           "\"; use name, json or yaml (or leave it out)");
  }
  write.output = output;
  if (dry_run == "client") {
    write.dry_run = true;
  } else if (!dry_run.empty() && dry_run != "none") {
    return InvalidArgument("--dry-run: \"" + dry_run +
                           "\" is not offered; use --dry-run=client to print the objects "
                           "without creating them");
  }
  return write;
}

Status RunServe(k8s::ApiClient& client, const std::string& job_name, const ServeOptions& options,
                const WriteOptions& write, std::ostream& out, std::ostream& err) {
  Result<api::HybridJob> job = ReadJob(client, job_name, write.namespace_name);
  if (!job.ok()) {
    return job.status();
  }
  std::vector<std::string> notes;
  const api::VolumeSpec* volume = job->spec.FindVolume(options.volume);
  Result<ClaimPlacement> placement = ClaimPlacement{};
  if (volume != nullptr) {
    placement = ReadPlacement(client, *job, *volume, write.namespace_name, &notes);
    if (!placement.ok()) {
      return placement.status();
    }
  }
  std::string autoscaling = "autoscaling/v2";
  const int32_t min = options.min_replicas.value_or(options.replicas.value_or(1));
  if (options.max_replicas.value_or(min) > min) {
    Result<std::string> raw = client.GetRaw("/apis/autoscaling");
    if (!raw.ok()) {
      return Status(raw.status().code(),
                    "cannot read which autoscaling versions the API server serves (GET "
                    "/apis/autoscaling): " +
                        raw.status().message());
    }
    Result<std::string> chosen =
        ChooseAutoscalingVersion(json::parse(*raw, nullptr, /*allow_exceptions=*/false));
    if (!chosen.ok()) {
      return chosen.status();
    }
    autoscaling = *chosen;
  }
  Result<std::vector<json>> objects = BuildServeObjects(*job, options, autoscaling);
  if (!objects.ok()) {
    return objects.status();
  }
  if (Status s = WriteObjects(client, *objects, write, out); !s.ok()) {
    return s;
  }
  const std::string name = (*objects)[0]["metadata"]["name"];
  for (const std::string& note : PlacementNotes("deployment " + name, *placement, job_name)) {
    notes.push_back(note);
  }
  for (const std::string& note : notes) {
    err << "note: " << note << "\n";
  }
  err << "These objects are not owned by job " << job_name
      << " and outlive it. Delete them with: kubectl delete deployment,service,hpa -n "
      << write.namespace_name << " -l " << kServeLabel << "=" << name << "\n";
  err.flush();
  return Status::Ok();
}

Status RunNotebook(k8s::ApiClient& client, const std::string& job_name,
                   const NotebookOptions& options, const WriteOptions& write, std::ostream& out,
                   std::ostream& err) {
  Result<api::HybridJob> job = ReadJob(client, job_name, write.namespace_name);
  if (!job.ok()) {
    return job.status();
  }
  std::vector<std::string> notes;
  std::vector<ClaimPlacement> placements;
  for (const api::VolumeSpec& volume : job->spec.volumes) {
    Result<ClaimPlacement> placement =
        ReadPlacement(client, *job, volume, write.namespace_name, &notes);
    if (!placement.ok()) {
      return placement.status();
    }
    placements.push_back(*placement);
  }
  Result<std::vector<json>> objects = BuildNotebookObjects(*job, options, NewToken());
  if (!objects.ok()) {
    return objects.status();
  }
  if (Status s = WriteObjects(client, *objects, write, out); !s.ok()) {
    return s;
  }
  const json& service = objects->back();
  const std::string name = service["metadata"]["name"];
  const std::string port = service["spec"]["ports"][0]["port"].dump();
  for (const ClaimPlacement& placement : placements) {
    for (const std::string& note : PlacementNotes("deployment " + name, placement, job_name)) {
      notes.push_back(note);
    }
  }
  for (const std::string& note : notes) {
    err << "note: " << note << "\n";
  }
  const std::string ns = write.namespace_name;
  err << "Reach it with: kubectl port-forward -n " << ns << " service/" << name << " " << port
      << ":" << port << "\n"
      << "then open http://localhost:" << port << "/?token=TOKEN, where TOKEN is: kubectl get "
      << "secret -n " << ns << " " << name << "-token -o jsonpath={.data.token} | base64 -d\n"
      << "These objects are not owned by job " << job_name
      << " and outlive it. Delete them with: kubectl delete deployment,service,secret -n " << ns
      << " -l " << kNotebookLabel << "=" << name << "\n";
  err.flush();
  return Status::Ok();
}

}  // namespace hybridjob::cli
