// SIGUSR1 asks a rank for its flight record (`kill -USR1 <pid>`, or `dtrain run`, which passes
// the signal on to every rank), as PyTorch's flight recorder dumps on a signal. The handler
// only write()s a byte to a pipe; a thread of its own reads it and writes the record of the
// process's current recorder, so nothing unsafe runs inside the handler.
//
// The handler is installed with the first recorder, and only where SIGUSR1 is still at its
// default action or ignored (as `dtrain run` starts ranks): a program that handles SIGUSR1
// itself keeps its handler.
#pragma once

namespace dtrain::runtime {

class FlightRecorder;

// `recorder` becomes the one SIGUSR1 writes (an elastic worker's new world replaces the old).
void record_on_sigusr1(const FlightRecorder* recorder);
// Before `recorder` goes away: SIGUSR1 no longer reaches it.
void forget_for_sigusr1(const FlightRecorder* recorder);

}  // namespace dtrain::runtime
