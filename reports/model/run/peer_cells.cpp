// reports/model/run/peer_cells.cpp: see peer_cells.h.
#include "reports/model/run/peer_cells.h"

namespace ladder {

namespace {
std::string last_component(const std::string& cell) {
  const size_t slash = cell.rfind('/');
  return slash == std::string::npos ? cell : cell.substr(slash + 1);
}
}  // namespace

bool is_peer_cell(const std::string& cell) { return last_component(cell).rfind(kPeerCellPrefix, 0) == 0; }

std::string shape_prefix(const std::string& cell) {
  const size_t slash = cell.rfind('/');
  return slash == std::string::npos ? "" : cell.substr(0, slash + 1);
}

std::string peer_name(const std::string& cell) {
  return is_peer_cell(cell) ? last_component(cell).substr(std::string(kPeerCellPrefix).size()) : cell;
}

std::string peer_display_name(const std::string& cell) {
  return is_peer_cell(cell) ? shape_prefix(cell) + "peer:" + peer_name(cell) : cell;
}

}  // namespace ladder
