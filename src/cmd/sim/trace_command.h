// `hybridjob-sim trace ...`: replays a job trace in virtual time under the
// scheduler's policies and writes the reports (docs/trace-format.md).
#pragma once

namespace hybridjob::sim {

// argv[1] is "trace". Returns the exit code: 0, 1 on a failure while running,
// 2 on a usage error.
int RunTraceCommand(int argc, char** argv);

}  // namespace hybridjob::sim
