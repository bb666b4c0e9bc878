// variants/config/base_rung.h: the base rung's name, spelt once. The FP32
// baseline, first of the ladder, every switch off: every run measures it
// (the matrix puts it first), every ratio ("x fp32") and parity reference is
// against it, and a config without a rung runs it. A header of its own so
// that the config (config.h) can default to it without including the ladder
// (rungs.h, whose base_rung() is the rung itself).
#pragma once

namespace ladder {

inline constexpr const char* kBaseRungName = "fp32";

}  // namespace ladder
