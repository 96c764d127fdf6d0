#!/usr/bin/env bash
# bench/gpu_check.sh — the GPU paths against a real NVIDIA GPU (issue 32 item 6; docs/metrics.md, "GPUs").
#
# The local cluster's GPU logic has run only against a fake NVML (the tests) or declared capacity. On a
# machine with NVIDIA GPUs this script runs, in about 3 minutes (≤ 8 on one GPU and 16 cores):
#   setup    `make run` (or, where .gpu-bundle is, the bundle below, then what `make run` runs): the local
#            cluster up in a fresh $MPIJOB_HOME, and examples/pi.yaml run on it
#   C1       declared capacity = the machine's GPUs: the Node's allocatable and GPU labels, the zero-config
#            ClusterQueue's nvidia.com/gpu quota, all equal to what `nvidia-smi` lists
#   C2       a 2-node TrainJob whose ranks each run a torch CUDA matmul (checked against float64 on the CPU)
#            and then keep the GPU busy for $GPU_CHECK_HOLD seconds (default 60) while C3–C5 look
#   C2b      disjoint CUDA_VISIBLE_DEVICES: each rank sees only its pod's GPUs (CUDA_DEVICE_ORDER=PCI_BUS_ID);
#            on one GPU the launcher's pod holds it (a runtime asking the GPU for the launcher only) and
#            the other rank must see no GPU at all
#   C3       /metrics: DCGM_FI_DEV_GPU_UTIL > 0 and DCGM_FI_DEV_FB_USED > 0 on the GPU's pod, read by NVML
#   C4       `kubectl top` (metrics.k8s.io PodMetrics, its `mpijob.io/gpus` annotation: the rank's own GPU UUID,
#            busy) and `mpijob top JOB`
#   C5       the dashboard's charts: its usage series (/dashboard/api/.../usage) carry GPU utilization and
#            memory for the GPU's pod, none for a pod without a GPU
#   C6       the job ends Complete
# It prints one PASS/FAIL line per check and a JSON summary last; exit 0: all passed, 1: a check failed,
# 2: no GPU here (nothing GPU-related was checked: it says so and which checks need one), 3: setup failed.
#
# Usage (in the repository root):
#   bench/gpu_check.sh              on the GPU machine
#   bench/gpu_check.sh bundle       on a machine with network: .gpu-bundle/ for a GPU machine without one
#                                   (below); prints its size
#   bench/gpu_check.sh plumbing     on a machine without GPUs: the same steps against declared capacity
#                                   (nvidia.com/gpu=1) and a rank program without CUDA, to try the script
#                                   itself; reports every GPU check as NOT RUN and exits 2
# Environment: GPU_PYTHON (a python whose torch sees CUDA; default: the first of .venv/bin/python,
# python3 that does), GPU_CHECK_HOLD (seconds the ranks keep the GPU busy), MPIJOB_HOME (default: a new
# temporary folder; its server is stopped at the end).
#
# A GPU machine without network (no apt, no PyPI) cannot `make run`. `bundle` gathers on a machine with
# network what such a machine lacks: the cp312 wheels of mpijob's dependencies that a CUDA image with
# PyTorch does not already have, Debian's openssh and Open MPI packages (unpacked there without replacing
# any existing file), and the built dashboard. There the script makes .venv from the python that has
# torch (its packages through a .pth file), installs the bundle, and runs what `make run` runs. Where
# .gpu-bundle is present the script uses it, network or not.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
MODE=${1:-check}
HOLD=${GPU_CHECK_HOLD:-60}
BUNDLE=$ROOT/.gpu-bundle
JOB=gpu-check
START=$(date +%s)
GPU_CHECKS="C1 capacity from the GPUs, C2 CUDA matmul on each rank, C2b disjoint CUDA_VISIBLE_DEVICES, \
C3 NVML usage in /metrics, C4 kubectl top / mpijob top GPU figures, C5 the dashboard's GPU series, C6 job Complete"

say() { printf '[gpu_check %4ss] %s\n' "$(($(date +%s) - START))" "$*" >&2; }
die() { say "SETUP FAILED: $*"; exit 3; }

# -- bundle: on a machine with network, what an offline GPU machine lacks ---------------------------------
# Python packages that a CUDA image with PyTorch holds (that of the GPU machines this was prepared for): not bundled
IMAGE_HAS="annotated-doc anyio attrs certifi charset-normalizer click cloudpickle h11 httpcore httpx idna \
joblib markdown-it-py mdurl mpi4py numpy nvidia-ml-py prometheus-client pygments python-dateutil pyyaml \
requests rich scikit-learn scipy shellingham six threadpoolctl typer typing-extensions urllib3"
DEBS="openssh-server openssh-client openssh-sftp-server openmpi-bin"
# Left out of their dependencies: what every Debian or Ubuntu root has (libc, libssl, PAM, systemd's library,
# ...), which must never be mixed with another release's, and what only hwloc's optional plugins, Perl or
# debconf need
BASE_DEBS='^(libc6|libc-bin|libgcc-s1|gcc-[0-9]+-base|libstdc\+\+6|libatomic1|libssl3|zlib1g|libzstd1|liblzma5|liblz4-1|'\
'libbz2-1.0|libsystemd0|libelogind0|libudev1|libpam.*|libselinux1|libsemanage.*|libsepol2|libaudit.*|libcrypt1|'\
'libgcrypt20|libgpg-error0|libcap2|libcap-ng0|libpcre2-.*|libuuid1|libtinfo6|libncursesw6|libreadline8|libproc2-0|'\
'perl|perl-.*|libperl.*|lib.*-perl|libicu[0-9]+|libxml2|libx11-.*|libxau6|libxcb1|libxdmcp6|libxext6|'\
'libhwloc-plugins|libxnvctrl0|libpciaccess0|ocl-icd-libopencl1|cdebconf|debconf|install-info|libdb5.3|libgdbm.*|'\
'libnewt0.52|libslang2|libdebian-installer4|libtextwrap1|usrmerge|usr-is-merged|runit-helper|ucf|lsb-base|adduser|'\
'passwd|procps|dpkg|sensible-utils|tar|sysvinit-utils|init-system-helpers|readline-common)$'

bundle() {
  grep -qxF '/.gpu-bundle/' .git/info/exclude 2>/dev/null || echo '/.gpu-bundle/' >>.git/info/exclude
  rm -rf "$BUNDLE" && mkdir -p "$BUNDLE"/{wheels,debs}
  python3 -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]))' \
    >"$BUNDLE/requirements.txt"
  echo "setuptools==84.2.1" >>"$BUNDLE/requirements.txt"  # builds the editable install (pyproject: >= 68)
  local plat=() n
  for n in 17 24 27 28 31 34; do plat+=(--platform "manylinux_2_${n}_x86_64"); done
  say "wheels for CPython 3.12 (the GPU image's python), mpijob's pins and what they need"
  python3 -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp "${plat[@]}" \
    --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d "$BUNDLE/wheels" -r "$BUNDLE/requirements.txt"
  local w name
  for w in "$BUNDLE"/wheels/*.whl; do
    name=$(basename "$w" | cut -d- -f1 | tr '_A-Z' '-a-z')
    if [[ " $IMAGE_HAS " == *" $name "* ]]; then rm "$w"; fi
  done
  say "Debian packages: $DEBS and the libraries they need beyond Debian's required ones"
  local pkgs
  pkgs=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces \
           --no-enhances --no-pre-depends $DEBS 2>/dev/null | grep -E '^[a-z0-9]' | sort -u)
  local keep=()
  for p in $pkgs; do
    [[ "$p" =~ $BASE_DEBS ]] || keep+=("$p")
  done
  (cd "$BUNDLE/debs" && apt-get download "${keep[@]}" >/dev/null 2>&1) || die "apt-get download ${keep[*]}"
  [ -f web/dist/index.html ] || make dashboard
  cp -r web/dist "$BUNDLE/dashboard"
  echo 3.12 >"$BUNDLE/python-version"
  say "bundle: $(du -sh "$BUNDLE" | cut -f1) in $BUNDLE ($(ls "$BUNDLE"/wheels | wc -l) wheels, $(ls "$BUNDLE"/debs | wc -l) debs)"
  say "on the GPU machine: carry .gpu-bundle and run bench/gpu_check.sh"
}

# -- setup on a GPU machine without network, from the bundle ------------------------------------------------
offline_setup() {
  local py=${GPU_PYTHON:-python3}
  [ "$("$py" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')" = "$(cat "$BUNDLE/python-version")" ] \
    || die "the bundle's wheels are for Python $(cat "$BUNDLE/python-version"), $py is another"
  say "offline setup from .gpu-bundle: Debian packages (only files not already there), then .venv"
  local stage p rel
  stage=$(mktemp -d)
  for p in "$BUNDLE"/debs/*.deb; do dpkg-deb -x "$p" "$stage"; done
  # file by file, never over an existing one, through the root's own directory links (/lib -> usr/lib)
  while IFS= read -r -d '' p; do
    rel=${p#"$stage"}
    if [ ! -e "$rel" ] && [ ! -L "$rel" ]; then mkdir -p "$(dirname "$rel")" && cp -a "$p" "$rel"; fi
  done < <(find "$stage" \( -type f -o -type l \) -print0)
  rm -rf "$stage"
  ldconfig
  # what openmpi-bin's postinst does with update-alternatives
  [ -e /usr/bin/mpirun ] || ln -s mpirun.openmpi /usr/bin/mpirun
  [ -e /usr/bin/mpiexec ] || ln -s mpiexec.openmpi /usr/bin/mpiexec
  id sshd >/dev/null 2>&1 || useradd --system --home-dir /run/sshd --shell /usr/sbin/nologin sshd
  mkdir -p /run/sshd
  for p in /usr/sbin/sshd /usr/bin/ssh /usr/bin/mpirun; do
    [ -x "$p" ] || die "$p missing after unpacking the bundle"
    if ldd "$p" | grep -q 'not found'; then die "$p lacks libraries: $(ldd "$p" | grep 'not found' | tr -s ' \t\n' ' ')"; fi
  done
  if [ ! -x .venv/bin/mpijob ]; then
    rm -rf .venv
    local pip=(.venv/bin/python -m pip)
    # a Python without ensurepip (Debian's and Ubuntu's, without python3-venv) makes it without pip: $py's pip serves
    "$py" -m venv .venv 2>/dev/null || { rm -rf .venv && "$py" -m venv --without-pip .venv && pip=("$py" -m pip --python .venv/bin/python); }
    # the GPU image's packages (torch, numpy, setuptools, ...) are seen from .venv, after the bundle's in .venv itself
    "$py" -c 'import site; print("\n".join(site.getsitepackages()))' \
      >".venv/lib/python$(cat "$BUNDLE/python-version")/site-packages/zz_gpu_image.pth"
    "${pip[@]}" install -q --no-index --no-deps "$BUNDLE"/wheels/*.whl
    "${pip[@]}" install -q --no-index --no-deps --no-build-isolation --config-settings editable_mode=compat -e .
  fi
  [ -f web/dist/index.html ] || { mkdir -p web && cp -r "$BUNDLE/dashboard" web/dist; }
}

setup() {
  if [ -d "$BUNDLE" ]; then  # brought here on purpose: this machine has no network
    offline_setup
    say "what make run runs: mpijob run --replace -f examples/pi.yaml"
    .venv/bin/mpijob run --replace -f examples/pi.yaml >&2 || die "examples/pi.yaml did not run"
  else
    say "setup: make run (installs what is missing, starts the local cluster, runs examples/pi.yaml)"
    make run >&2 || die "make run failed; without network, run 'bench/gpu_check.sh bundle' where there is, and bring .gpu-bundle"
  fi
}

# -- the rank program and the checks ----------------------------------------------------------------------------
# Each rank prints one `GPUCHECK {json}` line: what it sees, and (with CUDA) the matmul's error and count.
RANK_PROGRAM=$(cat <<'EOF'
import json, os, time
rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "-1"))
seen = {"rank": rank, "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "cuda_device_order": os.environ.get("CUDA_DEVICE_ORDER")}
if os.environ.get("GPU_CHECK_PLUMBING"):
    print("GPUCHECK " + json.dumps(seen), flush=True)
    time.sleep(float(os.environ["GPU_CHECK_HOLD"]))
    raise SystemExit(0)
import torch
seen["cuda_devices"] = torch.cuda.device_count()
if seen["cuda_devices"]:
    torch.backends.cuda.matmul.allow_tf32 = False
    props = torch.cuda.get_device_properties(0)
    seen.update(name=props.name, uuid=str(props.uuid))
    g = torch.Generator(device="cuda").manual_seed(rank)
    a = torch.randn(4096, 4096, device="cuda", generator=g)
    b = torch.randn(4096, 4096, device="cuda", generator=g)
    c = a @ b
    ref = a.double().cpu() @ b.double().cpu()
    seen["rel_err"] = float((c.double().cpu() - ref).abs().max() / ref.abs().max())
    print("GPUCHECK " + json.dumps(seen), flush=True)
    end, n = time.time() + float(os.environ["GPU_CHECK_HOLD"]), 0
    while time.time() < end:
        for _ in range(20):
            c = a @ b
        torch.cuda.synchronize()
        n += 20
    seen["matmuls"] = n
    print("GPUDONE " + json.dumps(seen), flush=True)
else:
    print("GPUCHECK " + json.dumps(seen), flush=True)
    time.sleep(float(os.environ["GPU_CHECK_HOLD"]))
EOF
)

CHECKER=$(cat <<'EOF'
"""Runs the job and the checks against the local cluster of $MPIJOB_HOME; prints PASS/FAIL lines and JSON."""
import base64, json, os, re, shutil, ssl, subprocess, sys, time
import httpx, yaml
from mpijob import Client, TrainJob

GPUS, TORCH_PY, PLUMBING = int(os.environ["GPU_COUNT"]), os.environ["TORCH_PY"], bool(os.environ.get("GPU_CHECK_PLUMBING"))
HOLD, JOB, MODEL = float(os.environ["GPU_CHECK_HOLD"]), os.environ["GPU_CHECK_JOB"], os.environ.get("GPU_MODEL", "")
GPU = "nvidia.com/gpu"
results = []

def check(name, ok, detail):
    results.append({"check": name, "passed": bool(ok), "detail": detail})
    print(f"{'PASS' if ok else 'FAIL'} {name}: {detail}", file=sys.stderr, flush=True)

def until(what, probe, timeout):
    """probe() until it returns something truthy; the last value after `timeout` s (None if never)."""
    end, value = time.monotonic() + timeout, None
    while time.monotonic() < end:
        value = probe()
        if value:
            return value
        time.sleep(1)
    print(f"  (gave up waiting {timeout:g}s for {what})", file=sys.stderr)
    return value

kubeconfig = os.path.join(os.environ["MPIJOB_HOME"], "kubeconfig")
conf = yaml.safe_load(open(kubeconfig))
cluster, user = conf["clusters"][0]["cluster"], conf["users"][0]["user"]
ca = ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
api = httpx.Client(base_url=cluster["server"], verify=ca, headers={"Authorization": f"Bearer {user['token']}"}, timeout=30)

def get(path):
    r = api.get(path)
    r.raise_for_status()
    return r.json() if "json" in r.headers.get("content-type", "") else r.text

# C1: capacity from the machine's GPUs
node = get("/api/v1/nodes")["items"][0]
alloc = node["status"]["allocatable"].get(GPU, "0")
labels = node["metadata"].get("labels") or {}
cq = get("/apis/kueue.x-k8s.io/v1beta2/clusterqueues/cluster-queue")
quota = [r["nominalQuota"] for g in cq["spec"]["resourceGroups"] for f in g["flavors"] for r in f["resources"]
         if r["name"] == GPU]
product = re.sub(r"[^A-Za-z0-9._-]+", "-", MODEL).strip("-._")[:63]
if not PLUMBING:
    check("C1 capacity", str(alloc) == str(GPUS) and [str(q) for q in quota] == [str(GPUS)]
          and labels.get("nvidia.com/gpu.count") == str(GPUS) and labels.get("nvidia.com/gpu.product") == product,
          f"nvidia-smi: {GPUS} x {MODEL!r}; Node allocatable {alloc}, labels count={labels.get('nvidia.com/gpu.count')} "
          f"product={labels.get('nvidia.com/gpu.product')} memory={labels.get('nvidia.com/gpu.memory')}; "
          f"ClusterQueue quota {quota}")

# C2: the 2-node job. On one GPU, a runtime whose launcher (a node: runLauncherAsNode) asks for it
client = Client()
runtime = "mpi-distributed"
resources = {GPU: 1} if GPUS >= 2 else {}
if GPUS == 1:
    rt = get("/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes/mpi-distributed")
    rt = {"apiVersion": rt["apiVersion"], "kind": rt["kind"], "metadata": {"name": "gpu-check-launcher-gpu"},
          "spec": rt["spec"]}
    for rj in rt["spec"]["template"]["spec"]["replicatedJobs"]:
        if rj["name"] == "launcher":
            for c in rj["template"]["spec"]["template"]["spec"]["containers"]:
                c.setdefault("resources", {}).setdefault("limits", {})[GPU] = "1"
    api.delete(f"/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes/{rt['metadata']['name']}")
    r = api.post("/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes", json=rt)
    assert r.status_code == 201, r.text
    runtime = rt["metadata"]["name"]
try:
    client.delete(JOB)
    until("the previous check job to go", lambda: JOB not in [j["metadata"]["name"] for j in client.list()], 60)
except Exception:
    pass
env = {"GPU_CHECK_HOLD": str(HOLD), **({"GPU_CHECK_PLUMBING": "1"} if PLUMBING else {})}
client.create(TrainJob(name=JOB, num_nodes=2, runtime=runtime, resources_per_node=resources, env=env,
                       command=["mpirun", TORCH_PY, "-c", os.environ["RANK_PROGRAM"]]))
client.wait(JOB, for_="Running", timeout=180)

def rank_lines(tag, count=2):
    """{rank: what it printed after `tag`} once `count` ranks have printed it, else None."""
    out = {}
    for line in client.logs(JOB):
        if line.startswith(tag + " "):
            seen = json.loads(line.split(" ", 1)[1])
            out[seen["rank"]] = seen
    return out if len(out) >= count else None

ranks = until("both ranks' GPUCHECK lines", lambda: rank_lines("GPUCHECK"), 120) or {}
pods = get(f"/api/v1/namespaces/{client.namespace}/pods?labelSelector=jobset.sigs.k8s.io/jobset-name={JOB}")["items"]
pod_gpus = {p["metadata"]["name"]: sum(int((c.get("resources") or {}).get("limits", {}).get(GPU, 0))
                                       for c in p["spec"]["containers"]) for p in pods}
gpu_pods = sorted(n for n, count in pod_gpus.items() if count)
print(f"  ranks: {json.dumps(ranks)}\n  GPUs the pods asked for: {pod_gpus}", file=sys.stderr)
visible = [s.get("cuda_visible_devices") for s in ranks.values()]
with_gpu = [s for s in ranks.values() if s.get("cuda_visible_devices")]
sets = [set(v.split(",")) for v in visible if v]
disjoint = all(not (a & b) for i, a in enumerate(sets) for b in sets[i + 1:])
if GPUS >= 2:
    disjoint_ok = len(sets) == 2 and disjoint and len({s.get("uuid") for s in ranks.values()}) == 2
else:  # one GPU: the launcher's rank has it, the other sees none
    disjoint_ok = len(sets) == 1 and visible.count("") == 1 and all(
        s.get("cuda_devices", 0) == 0 for s in ranks.values() if not s.get("cuda_visible_devices"))
orders = {s.get("cuda_device_order") for s in ranks.values()}
if PLUMBING:
    print(f"PLUMBING (declared GPUs, no CUDA): the ranks saw CUDA_VISIBLE_DEVICES {visible}, pods {pod_gpus}; "
          f"disjoint as planned: {disjoint_ok and orders == {'PCI_BUS_ID'}}", file=sys.stderr)
else:
    check("C2 CUDA matmul", len(with_gpu) == min(GPUS, 2) and all(s.get("cuda_devices") == len(
              s["cuda_visible_devices"].split(",")) and s.get("rel_err", 1) < 1e-3 for s in with_gpu),
          "; ".join(f"rank {s['rank']}: {s.get('name')} {s.get('uuid')} rel_err={s.get('rel_err')}" for s in with_gpu))
    check("C2b disjoint CUDA_VISIBLE_DEVICES", disjoint_ok and orders == {"PCI_BUS_ID"},
          f"ranks saw {visible} (CUDA_DEVICE_ORDER {orders}); pods with GPUs: {gpu_pods}")

# C3–C5 while the ranks keep their GPUs busy
def metric(text, name, pod):
    vals = [float(m[1]) for m in re.finditer(rf'^{name}{{[^}}]*pod="{re.escape(pod)}"[^}}]*}} (\S+)$', text, re.M)]
    return max(vals) if vals else None

def dcgm():
    text = get("/metrics")
    got = {p: (metric(text, "DCGM_FI_DEV_GPU_UTIL", p), metric(text, "DCGM_FI_DEV_FB_USED", p)) for p in gpu_pods}
    return got if got and all(u and m for u, m in got.values()) else None

def pod_metrics():
    items = get(f"/apis/metrics.k8s.io/v1beta1/namespaces/{client.namespace}/pods")["items"]
    got = {i["metadata"]["name"]: json.loads((i["metadata"].get("annotations") or {}).get("mpijob.io/gpus", "[]"))
           for i in items if i["metadata"]["name"] in pod_gpus}
    busy = {p: g for p, g in got.items() if g and all(x["utilization"] > 0 and x["memoryUsed"] > 0 for x in g)}
    return got if gpu_pods and sorted(busy) == gpu_pods else None

def usage():
    series = get(f"/dashboard/api/namespaces/{client.namespace}/trainjobs/{JOB}/usage")
    cols = series["columns"]
    u, m = cols.index("gpuUtilPercent"), cols.index("gpuMemoryBytes")
    got = {p["name"]: [(pt[u], pt[m]) for pt in p["points"]] for p in series["pods"]}
    ok = all(any(x and y for x, y in got.get(p, [])) for p in gpu_pods) and gpu_pods and all(
        all(x is None for x, _ in pts) for p, pts in got.items() if p not in gpu_pods)
    return got if ok else None

if PLUMBING:  # each probe once, so its code has run before a GPU machine's one try; no NVML here: empty
    time.sleep(5)  # two samples of the running pods
    print(f"PLUMBING capacity: Node allocatable {alloc}, GPU labels "
          f"{ {k: v for k, v in labels.items() if k.startswith('nvidia.com/')} }, ClusterQueue quota {quota}",
          file=sys.stderr)
    top = subprocess.run([".venv/bin/mpijob", "top", JOB], capture_output=True, text=True, timeout=60)
    print(f"PLUMBING probes (no NVML: nothing to find): /metrics {dcgm()}, PodMetrics {pod_metrics()}, "
          f"dashboard usage {usage()}, mpijob top rc={top.returncode}:\n{top.stdout}{top.stderr}", file=sys.stderr)
else:
    seen = until("NVML figures in /metrics", dcgm, HOLD / 3)
    check("C3 /metrics", seen, f"DCGM_FI_DEV_GPU_UTIL, DCGM_FI_DEV_FB_USED (MiB) per GPU pod: {seen}")
    seen = until("busy GPUs in PodMetrics", pod_metrics, HOLD / 6) or {}
    uuids = {s["uuid"].lower().removeprefix("gpu-") for s in with_gpu if s.get("uuid")}  # torch's, NVML's "GPU-..."
    annotated = {g["uuid"].lower().removeprefix("gpu-") for gs in seen.values() for g in gs}
    top = subprocess.run([".venv/bin/mpijob", "top", JOB], capture_output=True, text=True, timeout=60)
    kubectl = shutil.which("kubectl")
    ktop = (subprocess.run([kubectl, "--kubeconfig", kubeconfig, "top", "pods"], capture_output=True, text=True,
                           timeout=60) if kubectl else None)
    print(f"  mpijob top {JOB}:\n{top.stdout}{top.stderr}" + (f"  kubectl top pods:\n{ktop.stdout}{ktop.stderr}"
          if ktop else "  (no kubectl on this machine: PodMetrics read from the API kubectl top reads)\n"),
          file=sys.stderr)
    check("C4 kubectl top / mpijob top", seen and annotated == uuids and top.returncode == 0
          and all(p in top.stdout for p in gpu_pods) and (ktop is None or ktop.returncode == 0),
          f"PodMetrics mpijob.io/gpus UUIDs {sorted(annotated)} vs the ranks' {sorted(uuids)}; "
          f"mpijob top rc={top.returncode}" + (f", kubectl top rc={ktop.returncode}" if ktop else ", no kubectl"))
    seen = until("GPU points in the dashboard's usage series", usage, HOLD / 6)
    check("C5 dashboard GPU series", seen, "per pod (gpuUtilPercent, gpuMemoryBytes) points: "
          + json.dumps({p: [x for x in pts if x[0] is not None][-3:] for p, pts in (seen or {}).items()}))

done = client.wait(JOB, for_="Finished", timeout=HOLD + 180)
complete = any(c["type"] == "Complete" and c["status"] == "True" for c in done["status"].get("conditions", []))
if PLUMBING:
    print(f"PLUMBING: the job ended {'Complete' if complete else 'not Complete'}", file=sys.stderr)
else:
    finals = rank_lines("GPUDONE", len(with_gpu)) or {}
    check("C6 job Complete", complete, f"matmuls per rank while held: {[s.get('matmuls') for s in finals.values()]}")
client.delete(JOB)
print(json.dumps({"gpus": GPUS, "model": MODEL, "plumbing": PLUMBING, "checks": results}))
sys.exit(0 if PLUMBING or all(r["passed"] for r in results) else 1)
EOF
)

# -- main -------------------------------------------------------------------------------------------------------
case "$MODE" in
  bundle) bundle; exit 0 ;;
  check|plumbing) ;;
  *) echo "usage: bench/gpu_check.sh [check|bundle|plumbing]" >&2; exit 3 ;;
esac

GPU_COUNT=0 GPU_MODEL=""
if command -v nvidia-smi >/dev/null 2>&1; then
  GPU_COUNT=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
  GPU_MODEL=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || true)
fi
if [ "$MODE" = check ] && [ "$GPU_COUNT" -eq 0 ]; then
  why="nvidia-smi is not installed"; command -v nvidia-smi >/dev/null 2>&1 && why="nvidia-smi lists no GPU"
  say "NEEDS A GPU: $why, so none of the GPU checks can run here: $GPU_CHECKS."
  say "Nothing was checked. Run this on a machine with an NVIDIA GPU and driver ('bench/gpu_check.sh plumbing' tries the script itself with declared GPUs)."
  echo "{\"gpus\": 0, \"checks\": [], \"not_run\": \"no NVIDIA GPU: $why\"}"
  exit 2
fi

export MPIJOB_HOME=${MPIJOB_HOME:-$(mktemp -d /tmp/gpu-check.XXXXXX)/home}
unset KUBECONFIG
say "MPIJOB_HOME=$MPIJOB_HOME; GPUs: $GPU_COUNT ${GPU_MODEL:+x $GPU_MODEL}"
trap '.venv/bin/mpijob server stop >/dev/null 2>&1 || true' EXIT

TORCH_PY=""
if [ "$MODE" = check ]; then
  setup
  for cand in ${GPU_PYTHON:-} "$ROOT/.venv/bin/python" "$(command -v python3 || true)"; do
    if [ -n "$cand" ] && "$cand" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
      TORCH_PY=$cand; break
    fi
  done
  [ -n "$TORCH_PY" ] || die "no python here imports torch with CUDA (tried ${GPU_PYTHON:-} .venv/bin/python python3): set GPU_PYTHON, or .venv/bin/pip install torch"
  say "ranks run $TORCH_PY (torch $("$TORCH_PY" -c 'import torch; print(torch.__version__)'))"
else
  say "PLUMBING: declared capacity nvidia.com/gpu=1, ranks without CUDA; the GPU checks are NOT RUN"
  [ -x .venv/bin/mpijob ] || die "plumbing needs the venv: make setup"
  .venv/bin/mpijob server start --capacity nvidia.com/gpu=1 >&2
  .venv/bin/mpijob run --replace -f examples/pi.yaml >&2 || die "examples/pi.yaml did not run"
  GPU_COUNT=1 TORCH_PY=$ROOT/.venv/bin/python GPU_MODEL=""
  export GPU_CHECK_PLUMBING=1
fi

say "the 2-node job $JOB (ranks hold their GPU ${HOLD}s) and the checks"
rc=0
GPU_COUNT=$GPU_COUNT GPU_MODEL=$GPU_MODEL TORCH_PY=$TORCH_PY GPU_CHECK_HOLD=$HOLD GPU_CHECK_JOB=$JOB \
  RANK_PROGRAM=$RANK_PROGRAM .venv/bin/python -c "$CHECKER" || rc=$?
say "done in $(($(date +%s) - START)) s"
if [ "$MODE" = plumbing ]; then
  [ "$rc" -eq 0 ] || { say "the plumbing run failed (rc $rc)"; exit 1; }
  say "NOT RUN (needs a GPU): $GPU_CHECKS. The script's own steps ran against declared capacity."
  exit 2
fi
exit "$rc"
