#include <algorithm>

#include <hybridjob/common/quantity.h>
#include <hybridjob/scheduler/objects/resources.h>

namespace hybridjob::scheduler {
namespace {

std::vector<ScalarResource>::iterator LowerBound(std::vector<ScalarResource>& scalars,
                                                 std::string_view name) {
  return std::lower_bound(
      scalars.begin(), scalars.end(), name,
      [](const ScalarResource& scalar, std::string_view key) { return scalar.name < key; });
}

// Quantities arrive as strings from the API server but as numbers from
// hand-written manifests; both spell the same amount.
Result<std::string> QuantityText(const nlohmann::json& value) {
  if (value.is_string()) {
    return value.get<std::string>();
  }
  if (value.is_number_integer() || value.is_number_unsigned()) {
    return value.dump();
  }
  if (value.is_number_float()) {
    return value.dump();  // shortest round-trip form, e.g. "1.5" or "1e+20"
  }
  return InvalidArgument("quantity must be a string or a number, got " +
                         std::string(value.type_name()));
}

}  // namespace

int64_t ResourceList::Scalar(std::string_view name) const {
  for (const ScalarResource& scalar : scalars_) {
    if (scalar.name == name) {
      return scalar.amount;
    }
  }
  return 0;
}

void ResourceList::SetScalar(std::string_view name, int64_t amount) {
  auto it = LowerBound(scalars_, name);
  if (it != scalars_.end() && it->name == name) {
    it->amount = amount;
  } else {
    scalars_.insert(it, ScalarResource{std::string(name), amount});
  }
}

void ResourceList::AddScalar(std::string_view name, int64_t delta) {
  auto it = LowerBound(scalars_, name);
  if (it != scalars_.end() && it->name == name) {
    it->amount += delta;
  } else {
    scalars_.insert(it, ScalarResource{std::string(name), delta});
  }
}

int64_t ResourceList::Get(std::string_view name) const {
  if (name == kResourceCpu) {
    return milli_cpu;
  }
  if (name == kResourceMemory) {
    return memory;
  }
  if (name == kResourceEphemeralStorage) {
    return ephemeral_storage;
  }
  if (name == kResourcePods) {
    return pods;
  }
  return Scalar(name);
}

void ResourceList::Set(std::string_view name, int64_t amount) {
  if (name == kResourceCpu) {
    milli_cpu = amount;
  } else if (name == kResourceMemory) {
    memory = amount;
  } else if (name == kResourceEphemeralStorage) {
    ephemeral_storage = amount;
  } else if (name == kResourcePods) {
    pods = amount;
  } else {
    SetScalar(name, amount);
  }
}

ResourceList& ResourceList::operator+=(const ResourceList& other) {
  milli_cpu += other.milli_cpu;
  memory += other.memory;
  ephemeral_storage += other.ephemeral_storage;
  pods += other.pods;
  for (const ScalarResource& scalar : other.scalars_) {
    AddScalar(scalar.name, scalar.amount);
  }
  return *this;
}

ResourceList& ResourceList::operator-=(const ResourceList& other) {
  milli_cpu -= other.milli_cpu;
  memory -= other.memory;
  ephemeral_storage -= other.ephemeral_storage;
  pods -= other.pods;
  for (const ScalarResource& scalar : other.scalars_) {
    AddScalar(scalar.name, -scalar.amount);
  }
  return *this;
}

void ResourceList::SetToMax(const ResourceList& other) {
  milli_cpu = std::max(milli_cpu, other.milli_cpu);
  memory = std::max(memory, other.memory);
  ephemeral_storage = std::max(ephemeral_storage, other.ephemeral_storage);
  pods = std::max(pods, other.pods);
  for (const ScalarResource& scalar : other.scalars_) {
    if (scalar.amount > Scalar(scalar.name)) {
      SetScalar(scalar.name, scalar.amount);
    }
  }
}

bool ResourceList::IsZero() const {
  if (milli_cpu != 0 || memory != 0 || ephemeral_storage != 0 || pods != 0) {
    return false;
  }
  return std::all_of(scalars_.begin(), scalars_.end(),
                     [](const ScalarResource& scalar) { return scalar.amount == 0; });
}

std::string ResourceList::ToString() const {
  std::string out;
  auto append = [&out](std::string_view name, const std::string& amount) {
    if (!out.empty()) {
      out += ' ';
    }
    out.append(name).append("=").append(amount);
  };
  if (milli_cpu != 0) {
    append(kResourceCpu, FormatMilliQuantity(milli_cpu));
  }
  if (memory != 0) {
    append(kResourceMemory, FormatBinaryQuantity(memory));
  }
  if (ephemeral_storage != 0) {
    append(kResourceEphemeralStorage, FormatBinaryQuantity(ephemeral_storage));
  }
  for (const ScalarResource& scalar : scalars_) {
    if (scalar.amount != 0) {
      append(scalar.name, std::to_string(scalar.amount));
    }
  }
  if (pods != 0) {
    append(kResourcePods, std::to_string(pods));
  }
  return out;
}

bool operator==(const ResourceList& lhs, const ResourceList& rhs) {
  if (lhs.milli_cpu != rhs.milli_cpu || lhs.memory != rhs.memory ||
      lhs.ephemeral_storage != rhs.ephemeral_storage || lhs.pods != rhs.pods) {
    return false;
  }
  auto covered_by = [](const ResourceList& from, const ResourceList& other) {
    return std::all_of(from.scalars().begin(), from.scalars().end(),
                       [&other](const ScalarResource& scalar) {
                         return other.Scalar(scalar.name) == scalar.amount;
                       });
  };
  return covered_by(lhs, rhs) && covered_by(rhs, lhs);
}

ResourceList operator+(ResourceList lhs, const ResourceList& rhs) {
  lhs += rhs;
  return lhs;
}

ResourceList operator-(ResourceList lhs, const ResourceList& rhs) {
  lhs -= rhs;
  return lhs;
}

std::string_view FirstInsufficientResource(const ResourceList& request, const ResourceList& used,
                                           const ResourceList& allocatable) {
  if (request.pods > 0 && used.pods + request.pods > allocatable.pods) {
    return kResourcePods;
  }
  if (request.milli_cpu > 0 && used.milli_cpu + request.milli_cpu > allocatable.milli_cpu) {
    return kResourceCpu;
  }
  if (request.memory > 0 && used.memory + request.memory > allocatable.memory) {
    return kResourceMemory;
  }
  if (request.ephemeral_storage > 0 &&
      used.ephemeral_storage + request.ephemeral_storage > allocatable.ephemeral_storage) {
    return kResourceEphemeralStorage;
  }
  for (const ScalarResource& scalar : request.scalars()) {
    if (scalar.amount > 0 &&
        used.Scalar(scalar.name) + scalar.amount > allocatable.Scalar(scalar.name)) {
      return scalar.name;
    }
  }
  return {};
}

int64_t CopiesThatFit(const ResourceList& request, const ResourceList& capacity, int64_t limit) {
  int64_t copies = std::max<int64_t>(limit, 0);
  auto bound_by = [&copies](int64_t asked, int64_t offered) {
    if (asked > 0) {
      copies = std::min(copies, std::max<int64_t>(offered, 0) / asked);
    }
  };
  bound_by(request.pods, capacity.pods);
  bound_by(request.milli_cpu, capacity.milli_cpu);
  bound_by(request.memory, capacity.memory);
  bound_by(request.ephemeral_storage, capacity.ephemeral_storage);
  for (const ScalarResource& scalar : request.scalars()) {
    bound_by(scalar.amount, capacity.Scalar(scalar.name));
  }
  return copies;
}

Result<ResourceList> ParseResourceList(const nlohmann::json& resources) {
  ResourceList list;
  if (resources.is_null()) {
    return list;
  }
  if (!resources.is_object()) {
    return InvalidArgument("resource list must be an object, got " +
                           std::string(resources.type_name()));
  }
  for (auto it = resources.begin(); it != resources.end(); ++it) {
    const std::string& name = it.key();
    Result<std::string> text = QuantityText(it.value());
    if (!text.ok()) {
      return InvalidArgument(name + ": " + text.status().message());
    }
    Result<int64_t> amount =
        name == kResourceCpu ? ParseQuantityMilli(*text) : ParseQuantity(*text);
    if (!amount.ok()) {
      return InvalidArgument(name + ": " + amount.status().message());
    }
    if (*amount < 0) {
      return InvalidArgument(name + ": negative quantity \"" + *text + "\"");
    }
    list.Set(name, *amount);
  }
  return list;
}

}  // namespace hybridjob::scheduler
