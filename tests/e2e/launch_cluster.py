"""tests/e2e/launch_cluster.py: real launchers and real (namespaced) hosts for the
launcher tests (tests/e2e/e2e_launch.py) and the bandwidth sweep (scripts/net-sweep).

- SlurmCluster: a one-host Slurm cluster that lives in a directory of its own
  (munged, slurmctld -c, slurmd -c; its own config, state, spool, logs, munge
  key and socket, and free ports), started and stopped by the caller.
- TwoHosts: two network namespaces ("hosts") joined by a veth pair, one
  address each (10.231.0.1 and .2 inside the namespaces only), the same
  interface name on both (like eth0 on a real cluster), each command run in
  its own UTS namespace so each host has its own host name; optionally a
  bandwidth limit (kernel tbf) and a one-way delay (tests/e2e/delay_line.c).
- missing_tools(): what a case needs that is not installed (the case then
  prints "SKIP: ..." and exits 77).

Everything is torn down by close() (or leaving the `with` block), also after
a failure: every process in the namespaces is killed, the namespaces and
links deleted, the daemons stopped. Every wait is bounded.
"""
import contextlib
import ctypes
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import time

SKIP_CODE = 77


def missing_tools(*names):
    """The names of these executables that are not on PATH (sbin included)."""
    path = os.environ.get("PATH", "") + ":/usr/sbin:/sbin"
    return [n for n in names if shutil.which(n, path=path) is None]


def free_port(host="127.0.0.1"):
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def free_ports(n, host="127.0.0.1"):
    """n distinct free ports (held open together while they are picked)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind((host, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def wait_for(what, predicate, timeout, interval=0.2):
    """Polls predicate() until it is true; raises naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout} s")
        time.sleep(interval)


def stop_process(p, grace=5.0):
    """SIGTERM, then SIGKILL after `grace` seconds; reaps it. p: a Popen."""
    if p is None or p.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        p.send_signal(signal.SIGTERM)
    try:
        p.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            p.kill()
        p.wait(timeout=grace)


def die_with_parent():
    """preexec_fn: the child gets SIGKILL if this process dies first (a test killed at its ctest
    timeout leaves no daemon or rank behind)."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def sh(*cmd, check=True, timeout=30):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))}: exit {p.returncode}\n{p.stdout}{p.stderr}")
    return p


# ---- Slurm -----------------------------------------------------------------

SLURM_TOOLS = ("munged", "mungekey", "slurmctld", "slurmd", "srun", "sinfo", "scontrol")


class Managed:
    """A context manager over start() and close(): close() runs if start() fails, and on exit."""

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.close()
            raise

    def __exit__(self, *exc):
        self.close()


class SlurmCluster(Managed):
    """A one-host Slurm cluster under `root` (a fresh directory), 2 CPUs.

    srun/sinfo/scontrol find it through SLURM_CONF (self.env). Only root
    can run it this way (SlurmUser=root); the tests run as root.
    """

    def __init__(self, root, cpus=2):
        self.root = pathlib.Path(root)
        self.cpus = cpus
        self.procs = {}
        self.conf = self.root / "slurm.conf"
        self.host = socket.gethostname().split(".")[0]
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        for k in [k for k in self.env if k.startswith(("SLURM_", "SBATCH_", "SRUN_", "SALLOC_"))]:
            if k != "SLURM_CONF":
                del self.env[k]

    def _start(self, name, cmd):
        log = open(self.root / "log" / f"{name}.out", "w")
        self.procs[name] = subprocess.Popen([str(c) for c in cmd], stdout=log, stderr=subprocess.STDOUT,
                                            env=self.env, start_new_session=True, preexec_fn=die_with_parent)
        log.close()

    def logs(self):
        """The daemons' logs, for a failure message."""
        out = []
        for f in sorted((self.root / "log").glob("*")):
            text = f.read_text(errors="replace")
            out.append(f"--- {f.name} (last 2000 chars)\n{text[-2000:]}")
        return "\n".join(out)

    def start(self, timeout=60):
        r = self.root
        for d in ("munge", "state", "spool", "log"):
            (r / d).mkdir(parents=True, exist_ok=True)
        os.chmod(r, 0o755)  # munged: the socket's directories must be searchable by all
        key, sock = r / "munge" / "munge.key", r / "munge" / "munge.socket"
        sh("mungekey", "--create", "--keyfile", key, "--bits", "1024")
        os.chmod(key, 0o400)
        self._start("munged", ["munged", "--foreground", "--force", f"--socket={sock}", f"--key-file={key}",
                               f"--pid-file={r / 'munge' / 'munged.pid'}", f"--log-file={r / 'log' / 'munged.log'}",
                               f"--seed-file={r / 'munge' / 'munged.seed'}"])
        wait_for("munged's socket", lambda: sock.exists() or self._died("munged"), 15)
        ctld_port, d_port = free_ports(2)
        self.conf.write_text("\n".join([
            "ClusterName=ladder-test",
            f"SlurmctldHost={self.host}(127.0.0.1)",
            f"SlurmctldPort={ctld_port}",
            f"SlurmdPort={d_port}",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={sock}",
            f"StateSaveLocation={r / 'state'}",
            f"SlurmdSpoolDir={r / 'spool'}",
            f"SlurmctldPidFile={r / 'slurmctld.pid'}",
            f"SlurmdPidFile={r / 'slurmd.pid'}",
            f"SlurmctldLogFile={r / 'log' / 'slurmctld.log'}",
            f"SlurmdLogFile={r / 'log' / 'slurmd.log'}",
            # No cgroups, no accounting, no MPI plugin: nothing outside this directory.
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none",
            "SwitchType=switch/none",
            "MpiDefault=none",
            "SchedulerType=sched/builtin",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_CPU",
            "ReturnToService=2",
            "MailProg=/bin/true",
            "KillWait=5",
            f"NodeName={self.host} NodeAddr=127.0.0.1 CPUs={self.cpus} State=UNKNOWN",
            f"PartitionName=test Nodes={self.host} Default=YES MaxTime=10 State=UP",
            ""]))
        self._start("slurmctld", ["slurmctld", "-D", "-c", "-f", self.conf])
        self._start("slurmd", ["slurmd", "-D", "-c", "-f", self.conf])

        def idle():
            for name in ("munged", "slurmctld", "slurmd"):
                self._died(name)
            p = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, env=self.env,
                               timeout=10)
            return p.returncode == 0 and p.stdout.strip() == "idle"
        try:
            wait_for("the Slurm node to be idle", idle, timeout, interval=0.5)
        except Exception as e:
            raise RuntimeError(f"{e}\n{self.logs()}") from None
        return self

    def _died(self, name):
        p = self.procs.get(name)
        if p is not None and p.poll() is not None:
            raise RuntimeError(f"{name} exited with {p.returncode}\n{self.logs()}")
        return False

    def stray_steps(self):
        """slurmstepd processes of this cluster still alive (none once the jobs ended)."""
        out = []
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            with contextlib.suppress(OSError):
                cmd = pathlib.Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                env = pathlib.Path(f"/proc/{pid}/environ").read_bytes()
                if cmd and cmd[0].endswith(b"slurmstepd") and str(self.conf).encode() in env:
                    out.append(int(pid))
        return out

    def close(self):
        # Jobs first (scancel), then the daemons in reverse order.
        if "slurmctld" in self.procs and self.procs["slurmctld"].poll() is None:
            with contextlib.suppress(Exception):
                subprocess.run(["scancel", "--full", "-u", "root"], env=self.env, timeout=10, capture_output=True)
        for name in ("slurmd", "slurmctld", "munged"):
            with contextlib.suppress(Exception):
                stop_process(self.procs.get(name))
        for pid in self.stray_steps():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)



# ---- two hosts ---------------------------------------------------------------

NET_TOOLS = ("ip", "tc", "unshare")
SUBNET = "10.231.0"


def reap_stale_namespaces():
    """Deletes the namespaces of test processes that no longer run (killed before their teardown):
    names ladder<PID>... whose PID is gone. Their processes are killed first."""
    import re
    p = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    for line in p.stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        m = re.match(r"^ladder(\d+)(s\d+)?(h0|h1|lo)$", name)
        if not m or os.path.exists(f"/proc/{m.group(1)}"):
            continue
        for pid in subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True).stdout.split():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)
        subprocess.run(["ip", "netns", "del", name], capture_output=True)


def can_make_namespaces():
    """None when network namespaces can be made here, else why not."""
    if os.geteuid() != 0:
        return "network namespaces need root (ip netns add)"
    missing = missing_tools(*NET_TOOLS)
    if missing:
        return f"{', '.join(missing)} not installed (iproute2, util-linux)"
    name = f"ladderprobe{os.getpid()}"
    p = subprocess.run(["ip", "netns", "add", name], capture_output=True, text=True)
    if p.returncode != 0:
        return f"ip netns add failed: {p.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", name], capture_output=True)
    return None


class TwoHosts(Managed):
    """Two network namespaces joined by a veth pair; host i is 10.231.0.(i+1).

    Both ends are called `ifname` inside their namespaces (GLOO_SOCKET_IFNAME
    is the same on both hosts, as on a cluster). run()/popen() start a
    command on host i in its own UTS namespace, host name host0/host1.
    rate/delay: see shape().
    """

    def __init__(self, tag="", ifname="ldr0"):
        uniq = f"{os.getpid()}{tag}"
        self.ns = [f"ladder{uniq}h0", f"ladder{uniq}h1"]
        self.ifname = ifname
        self.addr = [f"{SUBNET}.1", f"{SUBNET}.2"]
        self.hostname = ["host0", "host1"]
        self.procs = []
        self.delay_line = None
        self._created = []

    def start(self):
        reap_stale_namespaces()
        for ns in self.ns:
            sh("ip", "netns", "add", ns)
            self._created.append(ns)
        tmp = [f"lv{os.getpid() % 10 ** 8}a", f"lv{os.getpid() % 10 ** 8}b"]  # <= 15 characters
        sh("ip", "link", "add", tmp[0], "netns", self.ns[0], "type", "veth", "peer", "name", tmp[1],
           "netns", self.ns[1])
        for i, ns in enumerate(self.ns):
            sh("ip", "-n", ns, "link", "set", tmp[i], "name", self.ifname)
            sh("ip", "-n", ns, "addr", "add", f"{self.addr[i]}/24", "dev", self.ifname)
            sh("ip", "-n", ns, "link", "set", self.ifname, "up")
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        return self

    def wrap(self, host, cmd):
        """cmd run on `host`: in its network namespace, with its own host name."""
        return ["ip", "netns", "exec", self.ns[host], "unshare", "--uts", "sh", "-c",
                f'hostname {self.hostname[host]} && exec "$@"', "sh", *[str(c) for c in cmd]]

    def popen(self, host, cmd, **kw):
        p = subprocess.Popen(self.wrap(host, cmd), start_new_session=True, preexec_fn=die_with_parent, **kw)
        self.procs.append(p)
        return p

    def run(self, host, cmd, timeout=60, **kw):
        return subprocess.run(self.wrap(host, cmd), capture_output=True, text=True, timeout=timeout, **kw)

    def rsh_agent(self, path):
        """Writes an Open MPI rsh agent (--mca plm_rsh_agent PATH) that runs the command it is given
        on the host named by its address, as ssh would on a cluster; returns path."""
        path = pathlib.Path(path)
        cases = "\n".join(f"  {self.addr[i]}) ns={self.ns[i]}; name={self.hostname[i]} ;;" for i in range(2))
        path.write_text(f"""#!/bin/sh
# Open MPI's rsh agent for two namespaced hosts: `AGENT HOST COMMAND...` runs
# COMMAND (one shell command line, as ssh takes it) on HOST.
host=$1; shift
case "$host" in
{cases}
  *) echo "rsh agent: unknown host $host" >&2; exit 1 ;;
esac
exec ip netns exec $ns unshare --uts sh -c "hostname $name && exec sh -c \\"\\$0\\"" "$*"
""")
        path.chmod(0o755)
        return path

    def pids(self, host):
        """Every process in host's network namespace."""
        p = subprocess.run(["ip", "netns", "pids", self.ns[host]], capture_output=True, text=True)
        return [int(x) for x in p.stdout.split()]

    def link(self, host, up):
        """Sets host's end of the wire up or down (down: the cable is cut)."""
        sh("ip", "-n", self.ns[host], "link", "set", self.ifname, "up" if up else "down")

    def shape(self, rate_mbit=None, delay_ms=0.0):
        """Limits both directions of the wire to rate_mbit and delays each packet by delay_ms one way.

        The rate is the kernel's token bucket (tc tbf) on each end's egress.
        The delay: this machine's kernel has no netem (CONFIG_NET_SCH_NETEM
        unset), so a delay is a user-space delay line (DelayLine): then each
        host's packets to the other's address go through a TUN device whose
        reader holds every packet for delay_ms and writes it on the other
        host's TUN device (same rate limit there), instead of the veth."""
        if rate_mbit:
            # burst: at least one 64 KiB GSO segment plus 1 ms at the rate; queue: 50 ms at the rate.
            burst = max(128 * 1024, int(rate_mbit * 1e6 / 8 / 1000))
            limit = max(2 * burst, int(rate_mbit * 1e6 / 8 * 0.05))
            for i, ns in enumerate(self.ns):
                sh("tc", "-n", ns, "qdisc", "replace", "dev", self.ifname, "root", "tbf", "rate",
                   f"{rate_mbit}mbit", "burst", str(burst), "limit", str(limit))
        if delay_ms > 0:
            self.delay_line = DelayLine(self, delay_ms, rate_mbit).start()

    def close(self):
        if self.delay_line:
            self.delay_line.close()
        for p in self.procs:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(p.pid, signal.SIGKILL)
        for p in self.procs:
            with contextlib.suppress(Exception):
                p.wait(timeout=10)
        for host, ns in enumerate(self._created):
            for _ in range(50):  # bounded: kill until the namespace holds no process
                pids = self.pids(host)
                if not pids:
                    break
                for pid in pids:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                time.sleep(0.1)
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)



# ---- the user-space delay line -------------------------------------------------


class DelayLine:
    """A one-way delay of `delay_ms` between the two hosts, in user space
    (tests/e2e/delay_line.c, compiled here with cc: kernels without netem).

    On each host a TUN device `ldt0` (address 10.232.0.(i+1)) carries the
    traffic to the other host's 10.231.0.x address (a /32 route, so the veth
    carries none of it then); delay_line holds every packet read from one
    host's TUN for delay_ms and writes it to the other host's TUN. The rate
    limit, if any, is a tbf on each TUN, as on the veth.
    """

    def __init__(self, hosts, delay_ms, rate_mbit=None, mtu=65000):
        self.hosts, self.delay_ms = hosts, delay_ms
        self.rate_mbit, self.mtu = rate_mbit, mtu
        self.proc = None
        self.dir = None

    def start(self):
        import tempfile
        h = self.hosts
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix="ladder_delay_line_"))
        exe = self.dir / "delay_line"
        sh("cc", "-O2", "-pthread", "-o", exe, pathlib.Path(__file__).with_name("delay_line.c"), timeout=120)
        self.proc = subprocess.Popen([str(exe), h.ns[0], h.ns[1], "ldt0", str(int(self.delay_ms * 1000))],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, preexec_fn=die_with_parent)
        line = self.proc.stdout.readline().strip()
        if line != "ready":
            raise RuntimeError(f"delay_line: {line} {self.proc.stderr.read() if self.proc.poll() is not None else ''}")
        for i, ns in enumerate(h.ns):
            sh("ip", "-n", ns, "link", "set", "ldt0", "mtu", str(self.mtu), "up")
            sh("ip", "-n", ns, "addr", "add", f"10.232.0.{i + 1}/32", "dev", "ldt0")
            # The other host's veth address through the TUN, with this host's veth address as source.
            sh("ip", "-n", ns, "route", "add", f"{h.addr[1 - i]}/32", "dev", "ldt0", "src", h.addr[i])
            if self.rate_mbit:
                burst = max(128 * 1024, int(self.rate_mbit * 1e6 / 8 / 1000))
                limit = max(2 * burst, int(self.rate_mbit * 1e6 / 8 * 0.05))
                sh("tc", "-n", ns, "qdisc", "replace", "dev", "ldt0", "root", "tbf", "rate",
                   f"{self.rate_mbit}mbit", "burst", str(burst), "limit", str(limit))
        return self

    def close(self):
        if self.proc is not None:
            stop_process(self.proc)
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
