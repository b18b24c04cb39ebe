// Shutdown on SIGINT/SIGTERM without signal handlers or detached threads:
// block the signals before any thread starts (threads inherit the mask), then
// wait for one on the main thread.
#pragma once

namespace hybridjob {

// Call first thing in main().
void BlockShutdownSignals();
// Blocks until SIGINT or SIGTERM arrives; returns the signal number.
int WaitForShutdownSignal();

}  // namespace hybridjob
