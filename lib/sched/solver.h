// Which sampler steps the flow (sched/scheduler.h): a small header of its own so that the CLI's option table
// (config/options.h) maps "--sample-solver unipc|euler" onto it without including ATen.
#pragma once

namespace omni::sched {

enum class Solver { kUniPC, kEuler };

}  // namespace omni::sched
