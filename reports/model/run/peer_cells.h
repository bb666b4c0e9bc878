// reports/model/run/peer_cells.h: how a run's PyTorch peer cells are named, in the
// matrix and in what tables and comparisons show.
//
// A peer (bench/run/peers.h: `ladder run --peers`) is the cell "peer-<name>", or
// "<shape>/peer-<name>" in a multi-shape matrix, measured with the switches
// of peer_base_rung() (variants/config/rungs.h: the rung whose switch declares
// peers_base). Reports read these names back, so they live here, below the
// bench that makes the cells.
#pragma once

#include <string>

namespace ladder {

// The rung a summary's peers were compared with when it does not say
// (peers.compared_with, written since the peers were compared with a
// declared rung): summaries before it compared them with fused-adamw.
inline constexpr const char* kPeersComparedWithWhenUnsaid = "fused-adamw";
inline constexpr const char* kPeerCellPrefix = "peer-";

// "peer-eager", or "<shape>/peer-eager" -> true.
bool is_peer_cell(const std::string& cell);
// "<shape>/" of "<shape>/<rung>", "" of a one-shape run's "<rung>".
std::string shape_prefix(const std::string& cell);
// The peer's own name: "eager" of "peer-eager" and "<shape>/peer-eager";
// other cells unchanged.
std::string peer_name(const std::string& cell);
// The name tables and comparisons show: "peer:eager", "<shape>/peer:eager";
// other cells unchanged.
std::string peer_display_name(const std::string& cell);

}  // namespace ladder
