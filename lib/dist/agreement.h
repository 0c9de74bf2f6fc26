// Agreed failure: a phase that may fail on some ranks only (loading files, checking paths) runs on every rank,
// then the ranks agree on the outcome with one collective, so that a failure on one rank makes every rank
// exit with the same code instead of leaving the others waiting in a later collective. The first failing
// rank (lowest rank) reports; the others throw an Error marked already reported.
#pragma once

#include <functional>

#include "core/error.h"
#include "dist/communicator.h"

namespace omni::dist {

// Thrown on the ranks that did not fail themselves: same exit code, message left to the reporting rank.
class PeerFailure : public Error {
 public:
  PeerFailure(ExitCode code, int failed_rank);
  int failed_rank() const { return failed_rank_; }

 private:
  int failed_rank_;
};

// Runs `phase` on every rank of `comm` (which must contain no collective that a failure could skip, or the
// collective must be over ranks that fail together), then agrees: if any rank threw, the lowest such rank
// rethrows its error and every other rank throws PeerFailure with that rank's exit code.
void run_agreed(const Communicator& comm, const std::function<void()>& phase);

}  // namespace omni::dist
