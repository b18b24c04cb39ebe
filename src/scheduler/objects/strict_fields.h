// How the scheduler reads the API objects it parses: through the project's
// one JSON field reader, refusing an object at its first malformed field (the
// parsers turn the throw into a Status). Private to the objects library.
#pragma once

#include <hybridjob/common/json_fields.h>

namespace hybridjob::scheduler {

inline JsonFields Strict() {
  return JsonFields(JsonFields::Mode::kFirstErrorThrows);
}

}  // namespace hybridjob::scheduler
