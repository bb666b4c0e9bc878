// bench/run/cell.h: one cell of the benchmark matrix (bench/run/matrix.h): a fully
// resolved RunConfig measured in its own child process, a parity reference,
// or a PyTorch peer (bench/run/peers.h).
#pragma once

#include <string>

#include "variants/config/config.h"

namespace ladder {

struct Cell {
  std::string id;    // directory under the run: "flash", or "gpt2-124m-b16-t1024/flash"
  std::string role;  // "measure", "parity" (a short reference run) or "peer" (bench/run/peers.h)
  std::string peer;  // the peer's name ("eager", "compile") when role is "peer"
  RunConfig cfg;
  bool runnable = true;
  std::string not_runnable_reason;
  // Loss parity: this cell's first parity_steps losses against `parity_ref`'s
  // ("" = none: the baseline itself). `parity_subject` is the cell whose
  // losses are checked (the measured rung, or an accumulation parity cell).
  std::string parity_ref, parity_subject;
};

}  // namespace ladder
