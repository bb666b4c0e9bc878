// bench/measure/observers/traffic_monitor.cpp: see traffic_monitor.h.
#include "bench/measure/observers/traffic_monitor.h"

#include <fstream>
#include <sstream>

namespace ladder {

NetCounters parse_net_dev(const std::string& text) {
  NetCounters c;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    // "  eth0: 1234 5 0 0 0 0 0 0 5678 9 ...": rx bytes first, tx bytes ninth.
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    name.erase(0, name.find_first_not_of(' '));
    if (name.empty() || name.find('|') != std::string::npos) continue;  // the two header lines
    std::istringstream fields(line.substr(colon + 1));
    int64_t v[9];
    int n = 0;
    while (n < 9 && fields >> v[n]) ++n;
    if (n < 9) continue;
    c.ok = true;
    // Loopback, and ifb devices (they mirror another interface's packets).
    if (name == "lo" || name.rfind("ifb", 0) == 0) continue;
    c.rx_bytes += v[0];
    c.tx_bytes += v[8];
    c.interfaces.push_back(name);
  }
  return c;
}

NetCounters read_net_counters() {
  std::ifstream f("/proc/net/dev");
  if (!f) return {};
  std::stringstream text;
  text << f.rdbuf();
  return parse_net_dev(text.str());
}

void TrafficMonitor::before_step(int64_t, bool) {
  count0_ = pg_.traffic();
  net0_ = read_net_counters();
  if (interfaces_.empty()) interfaces_ = net0_.interfaces;
}

void TrafficMonitor::after_step(StepRecord& rec, bool) {
  const NetCounters net1 = read_net_counters();
  const TrafficCount d = pg_.traffic() - count0_;
  rec.has_traffic = true;
  rec.collective_payload_bytes = d.payload_bytes();
  rec.sent_bytes_ring = d.sent_bytes();
  const bool net = net0_.ok && net1.ok && net1.interfaces == net0_.interfaces;
  rec.net_tx_bytes = net ? net1.tx_bytes - net0_.tx_bytes : -1;
  rec.net_rx_bytes = net ? net1.rx_bytes - net0_.rx_bytes : -1;
}

}  // namespace ladder
