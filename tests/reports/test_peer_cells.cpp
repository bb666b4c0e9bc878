// tests/reports/test_peer_cells.cpp: how cells are named (reports/model/run/peer_cells.h): the
// shape prefix, a peer's own name and the name tables show, one shape or many.
#include <gtest/gtest.h>

#include "reports/model/run/peer_cells.h"

namespace ladder {
namespace {

TEST(PeerCells, ShapePrefixPeerNameAndDisplayName) {
  EXPECT_EQ(shape_prefix("fused-adamw"), "");
  EXPECT_EQ(shape_prefix("gpt2-124m-b16/fused-adamw"), "gpt2-124m-b16/");
  EXPECT_TRUE(is_peer_cell("peer-eager"));
  EXPECT_TRUE(is_peer_cell("tiny/peer-compile"));
  EXPECT_FALSE(is_peer_cell("peer/fp32"));
  EXPECT_EQ(peer_name("peer-eager"), "eager");
  EXPECT_EQ(peer_name("tiny/peer-compile"), "compile");
  EXPECT_EQ(peer_name("tiny/fp32"), "tiny/fp32");
  EXPECT_EQ(peer_display_name("peer-eager"), "peer:eager");
  EXPECT_EQ(peer_display_name("tiny/peer-compile"), "tiny/peer:compile");
  EXPECT_EQ(peer_display_name("tiny/fp32"), "tiny/fp32");
}

}  // namespace
}  // namespace ladder
