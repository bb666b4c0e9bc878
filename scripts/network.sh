# scripts/network.sh: whether apt's and PyPI's hosts can be reached, found out
# once and quickly, so that scripts/bootstrap and scripts/bundle never wait on
# a network that is not there (apt-get update and pip retry for minutes).
# Sourced; defines ladder_network_check, which sets
#   LADDER_APT_REACHABLE, LADDER_PIP_REACHABLE   1 or 0
#   LADDER_NETWORK_LINE                          one line saying what was found, and how long it took
# The probes, in this order, the first that answers decides:
#   LADDER_OFFLINE=1       offline, without looking
#   no default route       offline (/proc/net/route and /proc/net/ipv6_route)
#   a TCP connect          to apt's host (the first URI of /etc/apt/sources*) and
#                          PyPI's (PIP_INDEX_URL, else pypi.org), or to the proxy
#                          when https_proxy / http_proxy is set; both at once,
#                          each bounded by LADDER_NET_TIMEOUT_S (default 2)
# Standard tools only (bash's /dev/tcp, timeout, awk): it runs on a bare node.

# host:port of a URL ("https://pypi.org/simple" -> pypi.org:443).
_ladder_host_port() {
  local url="$1" scheme rest host port
  scheme="${url%%://*}"; rest="${url#*://}"; rest="${rest#*@}"; host="${rest%%/*}"
  if [[ "$host" == *:* ]]; then port="${host##*:}"; host="${host%:*}"
  else [[ "$scheme" == https ]] && port=443 || port=80
  fi
  printf '%s:%s\n' "$host" "$port"
}

# The first http(s) URI apt reads (one-line or deb822 sources).
_ladder_apt_uri() {
  local f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [[ -r "$f" ]] || continue
    awk '/^[[:space:]]*#/ {next}
         /^deb[[:space:]]/ { for (i = 2; i <= NF; i++) if ($i ~ /^https?:\/\//) { print $i; exit } }
         /^URIs:/ { for (i = 2; i <= NF; i++) if ($i ~ /^https?:\/\//) { print $i; exit } }' "$f"
  done | head -n 1
}

# Whether this host has a default route, IPv4 or IPv6.
_ladder_default_route() {
  awk 'NR > 1 && $2 == "00000000" { found = 1 } END { exit !found }' /proc/net/route 2>/dev/null && return 0
  awk '$1 == "00000000000000000000000000000000" && $2 == "00" && $10 != "lo" { found = 1 } END { exit !found }' \
    /proc/net/ipv6_route 2>/dev/null
}

# 0 when a TCP connection to host:port opens within the timeout (name lookup included).
_ladder_connects() {
  local host="${1%:*}" port="${1##*:}"
  timeout "${LADDER_NET_TIMEOUT_S:-2}" bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$host" "$port" 2>/dev/null
}

ladder_network_check() {
  local start_ns apt_hp pip_hp proxy how ms
  start_ns=$(date +%s%N)
  LADDER_APT_REACHABLE=0 LADDER_PIP_REACHABLE=0
  apt_hp="$(_ladder_host_port "$(_ladder_apt_uri || true)")"
  [[ "$apt_hp" == :* ]] && apt_hp=""
  pip_hp="$(_ladder_host_port "${PIP_INDEX_URL:-https://pypi.org/simple}")"
  proxy="${https_proxy:-${HTTPS_PROXY:-${http_proxy:-${HTTP_PROXY:-}}}}"
  if [[ "${LADDER_OFFLINE:-0}" == 1 ]]; then
    how="offline (LADDER_OFFLINE=1)"
  elif ! _ladder_default_route; then
    how="offline (no default route)"
  else
    if [[ -n "$proxy" ]]; then
      apt_hp="$(_ladder_host_port "$proxy")"; pip_hp="$apt_hp"
    fi
    local apt_pid="" pip_pid
    if [[ -n "$apt_hp" ]]; then _ladder_connects "$apt_hp" & apt_pid=$!; fi
    _ladder_connects "$pip_hp" & pip_pid=$!
    if [[ -n "$apt_pid" ]] && wait "$apt_pid"; then LADDER_APT_REACHABLE=1; fi
    if wait "$pip_pid"; then LADDER_PIP_REACHABLE=1; fi
    local apt_word="apt ${apt_hp:-(no source)}" pip_word="PyPI $pip_hp"
    [[ -n "$proxy" ]] && apt_word="apt" pip_word="PyPI through the proxy $pip_hp"
    if ((LADDER_APT_REACHABLE && LADDER_PIP_REACHABLE)); then how="online ($apt_word and $pip_word reachable)"
    elif ((LADDER_PIP_REACHABLE)); then how="partly online ($pip_word reachable; $apt_word not)"
    elif ((LADDER_APT_REACHABLE)); then how="partly online ($apt_word reachable; $pip_word not)"
    else how="offline ($apt_word and $pip_word not reachable within ${LADDER_NET_TIMEOUT_S:-2} s)"
    fi
  fi
  ms=$(( ($(date +%s%N) - start_ns) / 1000000 ))
  LADDER_NETWORK_LINE="network: $how, found in $((ms / 1000)).$(printf '%02d' $(( (ms % 1000) / 10 ))) s"
}
