#include <charconv>
#include <exception>

#include <hybridjob/api/labels.h>
#include <hybridjob/api/waiting.h>
#include <hybridjob/common/json_fields.h>
#include <hybridjob/controller/observed.h>
#include <hybridjob/k8s/object_meta.h>

namespace hybridjob::controller {
namespace {

using nlohmann::json;

// The controller observes its own pods and never refuses one: a field of an
// unexpected type reads as not set.
const json* Child(const json& object, std::string_view key) {
  return JsonMember(object, key);
}

std::string StringAt(const json& object, std::string_view key) {
  return JsonFields(JsonFields::Mode::kLenient).String(object, key, "").value_or("");
}

PodPhase ParsePhase(std::string_view phase) {
  if (phase == "Running") {
    return PodPhase::kRunning;
  }
  if (phase == "Succeeded") {
    return PodPhase::kSucceeded;
  }
  if (phase == "Failed") {
    return PodPhase::kFailed;
  }
  if (phase == "Unknown") {
    return PodPhase::kUnknown;
  }
  return PodPhase::kPending;
}

// A label's non-negative decimal number, written without leading zeros, or
// -1 when it is not one.
template <typename Number>
Number ParseLabelNumber(std::string_view text) {
  Number value = -1;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 0 || text.empty() ||
      (text.size() > 1 && text.front() == '0')) {
    return -1;
  }
  return value;
}

int32_t ParseIndex(std::string_view text) {
  return ParseLabelNumber<int32_t>(text);
}

}  // namespace

int64_t ParseRun(std::string_view text) {
  return text.empty() ? 0 : ParseLabelNumber<int64_t>(text);
}

namespace {

ObservedPod ObserveOrThrow(const json& pod) {
  ObservedPod out;
  out.name = k8s::NameOf(pod);
  out.uid = k8s::UidOf(pod);
  out.terminating = k8s::IsTerminating(pod);
  out.job_name = k8s::LabelOf(pod, api::kJobNameLabel);
  out.role = k8s::LabelOf(pod, api::kRoleLabel);
  out.index = ParseIndex(k8s::LabelOf(pod, api::kIndexLabel));
  out.run = ParseRun(k8s::LabelOf(pod, api::kRunLabel));
  out.group_spec = k8s::AnnotationOf(pod, api::kGroupSpecAnnotation);
  out.placement = k8s::AnnotationOf(pod, api::kPlacementAnnotation);
  out.controller_uid = k8s::ControllerUidOf(pod);
  if (const json* spec = Child(pod, "spec")) {
    out.node_name = StringAt(*spec, "nodeName");
  }
  if (const json* status = Child(pod, "status")) {
    out.phase = ParsePhase(StringAt(*status, "phase"));
    out.reason = StringAt(*status, "reason");
    if (const json* conditions = Child(*status, "conditions");
        conditions != nullptr && conditions->is_array()) {
      for (const json& condition : *conditions) {
        const std::string type = StringAt(condition, "type");
        const std::string state = StringAt(condition, "status");
        if (type == "PodScheduled" && state == "False") {
          std::string reason = StringAt(condition, "reason");
          if (reason == api::kSurplusReason) {
            out.surplus = true;
          } else {
            out.waiting_reason = std::move(reason);
            out.waiting_message = StringAt(condition, "message");
          }
        } else if (type == api::kDisruptionTargetCondition && state == "True") {
          out.disrupted = true;
          out.disruption_reason = StringAt(condition, "reason");
        } else if (type == api::kGangEvictionCondition && state == "True") {
          out.reclaimed = true;
        } else if (type == api::kGangWaitingCondition && state == "True") {
          out.standing =
              api::ParseStanding(StringAt(condition, "reason"), StringAt(condition, "message"));
          out.standing_since = StringAt(condition, "lastTransitionTime");
        }
      }
    }
    if (const json* containers = Child(*status, "containerStatuses");
        containers != nullptr && containers->is_array()) {
      for (const json& container : *containers) {
        if (const json* restarts = Child(container, "restartCount");
            restarts != nullptr && restarts->is_number_integer()) {
          out.restarts += restarts->get<int32_t>();
        }
        const json* last = Child(container, "lastState");
        const json* last_terminated = last != nullptr ? Child(*last, "terminated") : nullptr;
        if (const json* last_code =
                last_terminated != nullptr ? Child(*last_terminated, "exitCode") : nullptr;
            last_code != nullptr && last_code->is_number_integer()) {
          out.last_exit_code = last_code->get<int32_t>();
          if (out.last_termination_message.empty()) {
            out.last_termination_message = StringAt(*last_terminated, "message");
          }
        }
        const json* state = Child(container, "state");
        const json* terminated = state != nullptr ? Child(*state, "terminated") : nullptr;
        const json* code = terminated != nullptr ? Child(*terminated, "exitCode") : nullptr;
        if (code == nullptr || !code->is_number_integer()) {
          continue;
        }
        int32_t exit_code = code->get<int32_t>();
        if (!out.exit_code || (*out.exit_code == 0 && exit_code != 0)) {
          out.exit_code = exit_code;
        }
        if (exit_code != 0 && out.termination_message.empty()) {
          out.termination_message = StringAt(*terminated, "message");
        }
      }
    }
    if (const json* inits = Child(*status, "initContainerStatuses");
        inits != nullptr && inits->is_array()) {
      for (const json& container : *inits) {
        const json* last = Child(container, "lastState");
        const json* last_terminated = last != nullptr ? Child(*last, "terminated") : nullptr;
        if (last_terminated != nullptr && out.last_termination_message.empty()) {
          out.last_termination_message = StringAt(*last_terminated, "message");
        }
        const json* state = Child(container, "state");
        const json* terminated = state != nullptr ? Child(*state, "terminated") : nullptr;
        const json* code = terminated != nullptr ? Child(*terminated, "exitCode") : nullptr;
        if (code == nullptr || !code->is_number_integer() || code->get<int32_t>() == 0 ||
            out.init_exit_code) {
          continue;
        }
        out.failed_init_container = StringAt(container, "name");
        out.init_exit_code = code->get<int32_t>();
        if (out.termination_message.empty()) {
          out.termination_message = StringAt(*terminated, "message");
        }
      }
    }
  }
  return out;
}

}  // namespace

bool MemberProgressed(const ObservedPod& before, const ObservedPod& after) {
  return before.uid != after.uid || before.node_name != after.node_name ||
         before.phase != after.phase || before.restarts != after.restarts ||
         before.terminating != after.terminating || before.disrupted != after.disrupted ||
         before.reclaimed != after.reclaimed || before.surplus != after.surplus;
}

bool ObservedPod::AdmissionRefused() const {
  if (phase != PodPhase::kFailed || exit_code.has_value() || !bound()) {
    return false;  // a container ran (or the pod never reached a kubelet)
  }
  // The kubelet's admission and node-lifecycle reasons: OutOf<resource> from
  // the resource fit check, the others from its other admit handlers.
  static constexpr std::string_view kReasons[] = {"UnexpectedAdmissionError",
                                                  "NodeAffinity",
                                                  "NodeLost",
                                                  "NodePorts",
                                                  "NodeName",
                                                  "NodeShutdown",
                                                  "PodOSNotSupported",
                                                  "PodOSSelectorNodeLabelDoesNotMatch",
                                                  "InvalidNodeInfo",
                                                  "Taint"};
  if (reason.starts_with("OutOf")) {
    return true;
  }
  for (std::string_view known : kReasons) {
    if (reason == known) {
      return true;
    }
  }
  return false;
}

ObservedPod ObservePod(const json& pod) {
  try {
    return ObserveOrThrow(pod);
  } catch (const std::exception&) {
    // Only a value of an unexpected type gets here; such a pod is unusable.
    ObservedPod out;
    out.index = -1;
    return out;
  }
}

std::string_view ToString(PodPhase phase) {
  switch (phase) {
    case PodPhase::kPending:
      return "Pending";
    case PodPhase::kRunning:
      return "Running";
    case PodPhase::kSucceeded:
      return "Succeeded";
    case PodPhase::kFailed:
      return "Failed";
    case PodPhase::kUnknown:
      return "Unknown";
  }
  return "Unknown";
}

}  // namespace hybridjob::controller
