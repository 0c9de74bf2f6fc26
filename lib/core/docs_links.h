// Where the manual says what to do about an error: each error class with a troubleshooting entry ends its message
// with one of these (tests/e2e/docs checks that every one names a heading that exists).
#pragma once

namespace omni::docs {

inline constexpr const char* kDoesNotFit = "see docs/memory-and-speed.md#does-not-fit";
inline constexpr const char* kCollectiveTimedOut = "see docs/troubleshooting.md#a-collective-timed-out";
inline constexpr const char* kSharedGpu = "see docs/troubleshooting.md#two-ranks-on-one-gpu";
inline constexpr const char* kModelNotFound = "see docs/troubleshooting.md#model-not-found";
inline constexpr const char* kLoraDoesNotFit = "see docs/troubleshooting.md#a-lora-does-not-fit";

}  // namespace omni::docs
