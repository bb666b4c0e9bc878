// reports/model/report/identity_section.h: who wrote a report: ladder's
// build (suite), or a PyTorch peer (peer) in its place. A rung report holds
// both sections; a run summary's peer row holds the peer's.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "profiler/common/fields.h"

namespace ladder {

// The build that wrote the report, and its command line.
struct SuiteSection {
  std::string name, version, git_commit;
  std::vector<std::string> argv;
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("name", s.name, fields::Doc().one_of({"ladder"}));
    v("version", s.version);
    v("git_commit", s.git_commit);
    v("argv", s.argv, "the command line of the process that wrote the report");
  }
};

// A PyTorch peer (bench/run/peers.h): what ran instead of ladder's step.
// scripts/peer.py writes it; `ladder run` writes it for a peer that could
// not start or left no report (peer_section, bench/run/peers.h).
struct PeerSection {
  std::string name, program;
  std::optional<std::string> torch_version;
  std::string what;
  fields::Maybe<std::string> python, python_version;
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("name", s.name, fields::Doc("a peer of bench/run/peers.cpp's table (`ladder peers`)")
                          .one_of({"eager", "compile", "compile-autotune"}));
    v("program", s.program);
    v("torch_version", s.torch_version, "the Python torch that ran it (null: it never imported)");
    v("what", s.what);
    v("python", s.python);
    v("python_version", s.python_version);
  }
};

}  // namespace ladder
