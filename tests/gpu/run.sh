#!/usr/bin/env bash
# tests/gpu/run.sh [--dry-run | --preflight] — the one script a machine with a GPU runs:
#   0. preflight: the tools and libraries the build needs, and the GPUs;
#   1. builds the CUDA backend (build dir $PX_GPU_BUILD, default build-gpu);
#   2. runs every kernel against its CPU twin on fresh random data (the `gpu`
#      meson suite without its CPU-only emulation tests) and, with several
#      GPUs, the NCCL test on all of them;
#   3. runs whole training steps of the tiny models on the CUDA backend and
#      checks their losses against the CPU backend on the same plan, with
#      bf16 and fp32 storage (execute --dtype);
#   4. calibrates the GPU (`calibrate --gpu`), plans a 1B-class Llama on one
#      GPU with that profile, executes it (bf16 storage, as planned) and
#      compares predicted with measured step time and MFU;
#   5. times the attention kernels (bench, short);
#   6. runs the 1B step again with fp32 storage, for comparison;
#   and prints a table last (also written to $PX_GPU_BUILD/gpu-run/summary.txt).
#
# Every step runs under `timeout`; a failed or timed-out step is a FAIL row
# and the script goes on (only a failed build stops it: nothing else could
# run).  All output lands in $PX_GPU_BUILD/gpu-run/.  Exit status: 0 when
# every step passed, 1 otherwise, 77 without a GPU (unless --dry-run).
#
# Time budget on one H200 (16 cores): steps stop being started after
# PX_GPU_BUDGET_S (default 460 s, under the 8 minutes a GPU machine gives the
# script); each step gets min(its cap, what is left - what later steps keep).
#   step                                  expected    cap      keeps for later
#   0 preflight                              1 s        -
#   1 meson setup + ninja (from scratch)    40-90 s   180 s
#   2 gpu suite (~17 tests, 4 at a time)    20-40 s    90 s      150 s
#   3 tiny steps, 4 runs (llama bf16 and fp32, gpt bf16, qwen3 bf16): plan / cpu / cuda
#                                   1 / 2 / 5 s each   15 / 30 / 45 s each, 150 s
#   4 calibrate --gpu (full sweep)          15-30 s    60 s       90 s
#     llama-1b bf16 plan / execute 1+3 / compare  1 / 30 / 1 s   15 / 120 / 15 s
#   5 attention_bench --quick                5-10 s    30 s
#   6 llama-1b again with fp32 storage        30-40 s    90 s
# So steps 2-3 cannot eat the 150 s step 4 (the MFU row) needs, and a hung
# step costs its cap, not the whole run.
#
# PX_GPU_DEPS=FILE.tar.gz (or a directory): the non-CUDA libraries as a
# bundle made by `tests/gpu/deps.sh pack` on a Debian/Ubuntu machine, for a
# GPU machine without them; unpacked into $PX_GPU_BUILD/deps and put on the
# search paths before step 0.  PX_GPU_BUILD_CAP_S: the build's cap (180 s).
#
# --preflight: step 0 alone (a second or two): which tools and libraries
# are missing on this machine, before the GPU machine spends minutes building.
#
# --dry-run (or PX_GPU_DRY_RUN=1): without a GPU, do everything that does not
# need one — configure and build (or reuse the build dir as is with
# PX_GPU_REUSE_BUILD=1), check that every binary and every option this script
# uses exists, run the CPU halves (the CPU loss runs of step 3, every plan of
# steps 3 and 4, the report parsers on a CPU report) — and print the same
# table with the GPU rows saying "skipped (no GPU)".  Exit 0 when all of that
# passed, 1 when something is missing or failed, 77 when the build has no
# CUDA backend.  Registered as the meson test gpu_run_dry (suite gpu).
set -u
usage() {
  sed -n '2,/^set -u/p' "$0" | sed 's/^# \{0,1\}//; /^set -u/d'
}
DRY=${PX_GPU_DRY_RUN:-0}
PREFLIGHT_ONLY=0
for a in "$@"; do
  case "$a" in
    --dry-run) DRY=1 ;;
    --preflight) PREFLIGHT_ONLY=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "run.sh: unknown argument '$a' (--dry-run, --preflight, --help)" >&2; exit 2 ;;
  esac
done
[ "$DRY" = 0 ] || DRY=1
cd "$(dirname "$0")/../.." || exit 1
ROOT=$(pwd)
BUILD=${PX_GPU_BUILD:-build-gpu}
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
OUT_DIR=$BUILD/gpu-run
REUSE=${PX_GPU_REUSE_BUILD:-0}
BUDGET_S=${PX_GPU_BUDGET_S:-460}
LOSS_RTOL=${PX_GPU_LOSS_RTOL:-2e-2}
[ -d /usr/local/cuda/bin ] && export PATH="/usr/local/cuda/bin:$PATH"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
# Sandboxed machines (gVisor) may refuse cross-process memory reads (CMA):
# Open MPI's shared-memory transport then copies through its own buffers.
export OMPI_MCA_btl_vader_single_copy_mechanism=none
T0=$(date +%s)
DEADLINE=$((T0 + BUDGET_S))
log() { echo "# [$(($(date +%s) - T0))s] $*"; }
ROWS=()
FAILED=0
row() { ROWS+=("$(printf '%-30s %-16s %s' "$1" "$2" "$3")"); }
fail_row() { row "$1" FAIL "$2"; FAILED=1; }
NOGPU="skipped (no GPU)"

# Seconds a step may take: min(cap, left - reserve), reserve being what
# later, more important steps keep for themselves.  0 = no time left.
cap_s() {
  local cap=$1 reserve=${2:-0} left
  left=$((DEADLINE - $(date +%s) - reserve))
  [ "$left" -lt "$cap" ] && cap=$left
  [ "$cap" -lt 5 ] && cap=0
  echo "$cap"
}
# step LOG CAP RESERVE cmd... : runs cmd under timeout with output to LOG;
# returns its status, 124 on timeout, 125 when no time was left.
STEP_S=0
step() {
  local logf=$1 cap rc t
  cap=$(cap_s "$2" "$3"); shift 3
  if [ "$cap" = 0 ]; then
    echo "not started: time budget ($BUDGET_S s) spent" >"$logf"; STEP_S=0; return 125
  fi
  t=$(date +%s)
  timeout -k 10 "$cap" "$@" >"$logf" 2>&1
  rc=$?
  STEP_S=$(($(date +%s) - t))
  [ "$rc" = 137 ] && rc=124
  [ "$rc" = 124 ] && echo "run.sh: timed out after $cap s: $*" >>"$logf"
  return "$rc"
}
# Why a step failed, for its row.
why() { # rc log
  case "$1" in
    124) echo "timed out (see ${2#"$ROOT"/})" ;;
    125) echo "not started: time budget spent" ;;
    *) echo "exit $1 (see ${2#"$ROOT"/})" ;;
  esac
}

mkdir -p "$OUT_DIR" || exit 1

# A bundle of the non-CUDA libraries (tests/gpu/deps.sh pack), for a
# machine that lacks them and cannot install packages: unpacked once into
# $PX_GPU_BUILD/deps (or used in place when PX_GPU_DEPS is a directory).
DEPS_NOTE=""
if [ -n "${PX_GPU_DEPS:-}" ]; then
  DEPS_ROOT=$BUILD/deps
  if [ -d "$PX_GPU_DEPS" ]; then
    DEPS_ROOT=$PX_GPU_DEPS
  elif [ ! -f "$DEPS_ROOT/.unpacked" ]; then
    rm -rf "$DEPS_ROOT"
    mkdir -p "$DEPS_ROOT" && tar -C "$DEPS_ROOT" -xzf "$PX_GPU_DEPS" && touch "$DEPS_ROOT/.unpacked" ||
      DEPS_NOTE="could not unpack $PX_GPU_DEPS"
  fi
  if [ -z "$DEPS_NOTE" ] && deps_env=$("$ROOT/tests/gpu/deps.sh" env "$DEPS_ROOT"); then
    eval "$deps_env"
    DEPS_NOTE="libraries from ${DEPS_ROOT#"$ROOT"/}"
  else
    DEPS_NOTE="${DEPS_NOTE:-deps.sh env $DEPS_ROOT failed}"
  fi
fi

# ---- 0. preflight ---------------------------------------------------------------------------
NGPU=0
GPU_NAME="no GPU"
SMI=$(command -v nvidia-smi || echo /usr/local/nvidia/bin/nvidia-smi)
if [ -x "$SMI" ] && "$SMI" -L >/dev/null 2>&1; then
  NGPU=$("$SMI" -L | grep -c '^GPU')
  GPU_NAME=$("$SMI" --query-gpu=name --format=csv,noheader | head -1)
elif ls /dev/nvidia[0-9]* >/dev/null 2>&1; then
  # a driver without nvidia-smi on the PATH: count the device nodes
  NGPU=$(ls /dev/nvidia[0-9]* | wc -l)
  GPU_NAME="NVIDIA GPU (no nvidia-smi)"
fi
if [ "$NGPU" = 0 ] && [ "$DRY" = 0 ] && [ "$PREFLIGHT_ONLY" = 0 ]; then
  echo "# no GPU (nvidia-smi finds none): skipped; --dry-run checks everything that needs none"
  exit 77
fi
GPU_RUN=1
[ "$DRY" = 1 ] && GPU_RUN=0
log "$( [ "$DRY" = 1 ] && echo "dry run: " )$NGPU x $GPU_NAME; build dir ${BUILD#"$ROOT"/}; budget $BUDGET_S s"
missing=""
for tool in meson ninja mpirun python3 nvcc timeout pkg-config; do
  command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
if command -v pkg-config >/dev/null 2>&1; then
  pkg-config --exists jansson || missing="$missing jansson(pkg-config)"
  pkg-config --exists openblas || pkg-config --exists cblas || missing="$missing cblas(pkg-config)"
  pkg-config --exists ompi-c || pkg-config --exists mpich || command -v mpicc >/dev/null 2>&1 ||
    missing="$missing mpi(pkg-config/mpicc)"
fi
CUDA_INC=$(dirname "$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")")/include
has_header() { # the compiler's places: CPATH, /usr/local/include, /usr/include, CUDA's
  local d
  for d in ${CPATH:+${CPATH//:/ }} /usr/local/include /usr/include "$CUDA_INC"; do
    [ -f "$d/$1" ] && return 0
  done
  return 1
}
has_header glpk.h || missing="$missing glpk.h"
for l in cudart cublas cublasLt; do # meson's dependency('cuda', modules ...)
  ls "${CUDA_INC%/include}"/lib64/lib$l.so* "${CUDA_INC%/include}"/targets/*/lib/lib$l.so* \
    >/dev/null 2>&1 || missing="$missing lib$l(${CUDA_INC%/include})"
done
if ! has_header nccl.h; then
  # PyTorch images carry NCCL as the pip package nvidia-nccl: its headers
  # and library through a shim dir (it has libnccl.so.2, no libnccl.so).
  pip_nccl=$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null)
  if [ -n "$pip_nccl" ] && [ -f "$pip_nccl/include/nccl.h" ] && [ -f "$pip_nccl/lib/libnccl.so.2" ]; then
    shim=$BUILD/nccl-shim
    mkdir -p "$shim/lib" && ln -sfn "$pip_nccl/include" "$shim/include" &&
      ln -sf "$pip_nccl/lib/libnccl.so.2" "$shim/lib/libnccl.so"
    export CPATH="$shim/include${CPATH:+:$CPATH}"
    export LIBRARY_PATH="$shim/lib${LIBRARY_PATH:+:$LIBRARY_PATH}"
    export LD_LIBRARY_PATH="$pip_nccl/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    DEPS_NOTE="${DEPS_NOTE:+$DEPS_NOTE; }NCCL from $pip_nccl"
  else
    missing="$missing nccl.h"
  fi
fi
if [ -n "$missing" ]; then
  # Advisory when the build dir is already configured: its cache may know better.
  if [ -f "$BUILD/build.ninja" ]; then row "preflight" info "not found:$missing (build dir configured already)"
  else fail_row "preflight" "not found:$missing${DEPS_NOTE:+ ($DEPS_NOTE)} (scripts/setup's Debian packages, or PX_GPU_DEPS: docs/cuda-backend.md 'run.sh')"; fi
else
  row "preflight" ok "tools and libraries found; $NGPU GPU(s)${DEPS_NOTE:+; $DEPS_NOTE}"
fi
log "preflight:${missing:- everything found}"
if [ "$PREFLIGHT_ONLY" = 1 ]; then
  printf '%s\n' "${ROWS[@]}" | tee "$OUT_DIR/summary.txt"
  exit $FAILED
fi

# ---- 1. build -------------------------------------------------------------------------------
build_ok=1
if [ "$REUSE" = 1 ]; then
  [ -f "$BUILD/build.ninja" ] || { fail_row "build" "PX_GPU_REUSE_BUILD=1 but $BUILD is not a build dir"; build_ok=0; }
  [ "$build_ok" = 1 ] && row "build" ok "reused ${BUILD#"$ROOT"/} as it is (PX_GPU_REUSE_BUILD=1)"
else
  # (timeout runs programs, not shell functions: the two commands go to bash -c)
  if step "$OUT_DIR/build.log" "${PX_GPU_BUILD_CAP_S:-180}" 0 bash -c '{ [ -f "$1/build.ninja" ] ||
         meson setup "$1" -Dcuda=enabled --buildtype=release; } && ninja -C "$1" -j"$(nproc)"' \
       build "$BUILD"; then
    row "build" ok "$STEP_S s"
  else
    rc=$?; tail -30 "$OUT_DIR/build.log"; fail_row "build" "$(why $rc "$OUT_DIR/build.log")"; build_ok=0
  fi
fi
if [ "$build_ok" = 1 ] && [ ! -x "$BUILD/tests/gpu/test_gpu_kernels" ]; then
  if [ "$DRY" = 1 ]; then
    echo "# the build dir has no CUDA backend (tests/gpu/test_gpu_kernels missing): skipped"
    exit 77
  fi
  fail_row "build" "no CUDA backend in $BUILD (meson configure -Dcuda=enabled)"; build_ok=0
fi
# Every binary and option used below, so a missing one is named here and not
# discovered minutes into a run on the GPU machine.
if [ "$build_ok" = 1 ]; then
  bad=""
  for b in plan execute calibrate compare tests/gpu/test_gpu_kernels tests/gpu/test_nccl tests/gpu/test_backend_nccl \
           bench/attention_bench; do
    [ -x "$BUILD/$b" ] || bad="$bad $b(missing)"
  done
  has_opts() { # binary options...: each option must appear in `binary --help`
    local bin=$1 help o; shift
    help=$("$BUILD/$bin" --help 2>&1)
    for o in "$@"; do grep -q -- "$o" <<<"$help" || bad="$bad $bin:$o"; done
  }
  [ -x "$BUILD/execute" ] && has_opts execute --plan --backend --dtype --steps --warmup --report
  [ -x "$BUILD/calibrate" ] && has_opts calibrate --gpu --quick -o --base
  [ -x "$BUILD/compare" ] && has_opts compare --json
  grep -q -- '--quick' "$ROOT/bench/attention_bench.cu" || bad="$bad attention_bench:--quick"
  if [ -z "$bad" ]; then row "binaries and options" ok "every one this script uses is there"
  else fail_row "binaries and options" "missing:$bad"; fi
fi
if [ "$build_ok" = 0 ]; then
  for r in "kernels vs CPU twins" "whole steps vs CPU" "calibrate (GPU)" "llama-1b bf16, calibrated"; do
    row "$r" FAIL "not run: the build failed"
  done
fi

# ---- 2. kernels against their CPU twins, NCCL ----------------------------------------------
if [ "$build_ok" = 1 ] && [ "$GPU_RUN" = 1 ]; then
  # The *_emulated tests run the kernels thread by thread on the CPU (CI
  # runs them); this dry-run test would rerun this script: both left out.
  # gpu_backend_nccl needs every GPU (one rank each): run below, not here.
  mapfile -t GTESTS < <(meson test -C "$BUILD" --list --suite gpu --no-rebuild 2>/dev/null |
                        sed 's/.* \/ //' | grep -v -e emulated -e '^gpu_run_dry$' \
                          -e '^gpu_backend_nccl$')
  testlog="$BUILD/meson-logs/testlog.json"
  rm -f "$testlog"
  # (an unreadable list: the whole suite but the dry run, emulation included)
  [ "${#GTESTS[@]}" -gt 0 ] || GTESTS=(--suite gpu --no-suite gpu_dry)
  step "$OUT_DIR/kernels.log" 90 150 meson test -C "$BUILD" --no-rebuild --print-errorlogs \
    --num-processes 4 "${GTESTS[@]}"
  rc=$?
  sum=$(python3 - "$testlog" 2>/dev/null <<'PY'
import json, sys
ok = bad = skip = 0; names = []
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("result") in ("OK", "EXPECTEDFAIL"): ok += 1
    elif r.get("result") == "SKIP": skip += 1
    else: bad += 1; names.append(r.get("name", "?"))
print(ok, bad, skip, ",".join(names) or "-")
PY
)
  read -r KOK KBAD KSKIP KNAMES <<<"${sum:-0 0 0 -}"
  grep -E "seed|FAIL|max err" "$OUT_DIR/kernels.log" | head -60
  log "kernel tests: $KOK passed, $KBAD failed ($KNAMES), $KSKIP skipped (of ${#GTESTS[@]})"
  if [ "$rc" = 0 ] && [ "$KBAD" = 0 ] && [ "$KOK" -gt 0 ]; then
    # a skip here means a test saw no device: worth a look, not a failure
    row "kernels vs CPU twins" ok "$KOK tests, $STEP_S s$( [ "$KSKIP" = 0 ] || echo "; $KSKIP skipped (see log)")"
  elif [ "$rc" = 124 ] || [ "$rc" = 125 ]; then
    fail_row "kernels vs CPU twins" "$(why $rc "$OUT_DIR/kernels.log"); $KOK passed so far"
  else
    fail_row "kernels vs CPU twins" "$KBAD failed ($KNAMES), $KSKIP skipped, $KOK passed; exit $rc (see ${OUT_DIR#"$ROOT"/}/kernels.log)"
  fi
  if [ "$NGPU" -gt 1 ]; then
    if step "$OUT_DIR/nccl.log" 60 150 mpirun --oversubscribe -np "$NGPU" "$BUILD/tests/gpu/test_nccl"; then
      row "NCCL on $NGPU GPUs" ok "allreduce/allgather/reduce-scatter/p2p"
    else
      rc=$?; tail -20 "$OUT_DIR/nccl.log"; fail_row "NCCL on $NGPU GPUs" "$(why $rc "$OUT_DIR/nccl.log")"
    fi
    # the executor backend's own NCCL paths (comm_init per MPI group, in-place
    # forms, p2p batches, all-to-all-v; fp32 and bf16): its table is the log's end
    if step "$OUT_DIR/backend_nccl.log" 60 150 mpirun --oversubscribe -np "$NGPU" "$BUILD/tests/gpu/test_backend_nccl"; then
      row "backend NCCL on $NGPU GPUs" ok "$(grep -c ' ok$' "$OUT_DIR/backend_nccl.log") cases, fp32+bf16, $STEP_S s"
    else
      rc=$?; grep -E 'FAIL|failed' "$OUT_DIR/backend_nccl.log" | head -20
      fail_row "backend NCCL on $NGPU GPUs" "$(why $rc "$OUT_DIR/backend_nccl.log")"
    fi
  fi
elif [ "$build_ok" = 1 ]; then
  row "kernels vs CPU twins" "$NOGPU" "($(meson test -C "$BUILD" --list --suite gpu --no-rebuild 2>/dev/null | grep -vc -e emulated -e gpu_run_dry) tests listed)"
fi

# ---- 3. whole steps: CUDA backend vs CPU backend, same plan --------------------------------
# Loss tolerance: the CUDA backend multiplies on bf16 tensor cores (fp32
# accumulate); at init the loss is ~ln(V) and agrees to ~1e-3 relative.
# Both storage types of the engine (execute --dtype): bf16, what the cost
# model prices, on every configuration; fp32 on the first.
step_check() { # model dtype np plan-args...
  local name="$1 $2" tag="$1.$2" dtype=$2 np=$3 plan rc be res; shift 3
  plan="$OUT_DIR/$tag.plan.json"
  step "$OUT_DIR/$tag.plan.log" 15 150 "$BUILD/plan" "$@" --gpus "$np" --hw h200 -o "$plan"
  rc=$?  # (not `if ! step`: after `!`, $? is the negation's 0)
  if [ "$rc" != 0 ]; then
    fail_row "step $name" "plan: $(why $rc "$OUT_DIR/$tag.plan.log")"; return
  fi
  local backends="cpu cuda"
  [ "$np" -gt "$NGPU" ] && [ "$GPU_RUN" = 1 ] && { row "step $name" skipped "needs $np GPUs"; return; }
  [ "$GPU_RUN" = 0 ] && backends=cpu
  for be in $backends; do
    step "$OUT_DIR/$tag.$be.log" $([ $be = cpu ] && echo 30 || echo 45) 150 \
      mpirun --oversubscribe -np "$np" "$BUILD/execute" --plan "$plan" --backend $be \
      --dtype "$dtype" --steps 3 --warmup 0 --report "$OUT_DIR/$tag.$be.json"
    rc=$?
    if [ "$rc" != 0 ]; then
      tail -5 "$OUT_DIR/$tag.$be.log"
      fail_row "step $name" "execute --backend $be: $(why $rc "$OUT_DIR/$tag.$be.log")"; return
    fi
  done
  if [ "$GPU_RUN" = 0 ]; then
    res=$(python3 - "$OUT_DIR/$tag.cpu.json" <<'PY'
import json, math, sys
a = json.load(open(sys.argv[1]))["losses"]
ok = len(a) == 3 and all(math.isfinite(x) and x > 0 for x in a)
print("ok" if ok else "FAIL", "cpu losses %s" % " ".join("%.4f" % x for x in a))
PY
)
    [ "${res%% *}" = ok ] || { fail_row "step $name (cpu half)" "${res#* }"; return; }
    row "step $name" "$NOGPU" "${res#* } (cpu half ran)"
    return
  fi
  res=$(python3 - "$OUT_DIR/$tag.cpu.json" "$OUT_DIR/$tag.cuda.json" "$LOSS_RTOL" <<'PY'
import json, math, sys
a = json.load(open(sys.argv[1]))["losses"]; b = json.load(open(sys.argv[2]))["losses"]
tol = float(sys.argv[3])
ok = a and len(a) == len(b) and all(math.isfinite(x) for x in a + b)
err = max(abs(x - y) / max(abs(x), 1e-12) for x, y in zip(a, b)) if ok else float("inf")
print(("ok" if err <= tol else "FAIL"), "cpu %s cuda %s max rel %.2e" % (
    " ".join("%.4f" % x for x in a), " ".join("%.4f" % y for y in b), err))
PY
)
  row "step $name" "${res%% *}" "${res#* }"
  [ "${res%% *}" = ok ] || FAILED=1
}
if [ "$build_ok" = 1 ]; then
  step_check tiny-llama bf16 1 --model tiny-llama --tp 1 --pp 1 --dp 1 --mbs 4 --micro-batches 2 --seq 32
  step_check tiny-llama fp32 1 --model tiny-llama --tp 1 --pp 1 --dp 1 --mbs 4 --micro-batches 2 --seq 32
  step_check tiny-gpt bf16 1 --model tiny-gpt --tp 1 --pp 1 --dp 1 --mbs 4 --micro-batches 2 --seq 32
  # qk_norm (gathered head rows through rmsnorm) and shared experts on the GPU
  step_check tiny-qwen3 bf16 1 --model tiny-qwen3 --tp 1 --pp 1 --dp 1 --mbs 4 --micro-batches 2 --seq 32
  if [ "$NGPU" -ge 2 ] || [ "$GPU_RUN" = 0 ]; then
    step_check tiny-llama-tp2 bf16 2 --model tiny-llama --tp 2 --pp 1 --dp 1 --mbs 4 --micro-batches 2 --seq 32
    step_check tiny-llama-pp2 bf16 2 --model tiny-llama --tp 1 --pp 2 --dp 1 --mbs 2 --micro-batches 4 --seq 32 --schedule 1f1b
    step_check tiny-gpt-dp2 bf16 2 --model tiny-gpt --tp 1 --pp 1 --dp 2 --mbs 2 --micro-batches 2 --seq 32
  fi
  log "whole steps done"
fi

# ---- 4. calibrate, plan, execute a 1B-class Llama on one GPU -------------------------------
PROFILE="$OUT_DIR/gpu-profile.json"
if [ "$build_ok" = 1 ] && [ "$GPU_RUN" = 1 ]; then
  if step "$OUT_DIR/calibrate.log" 60 90 "$BUILD/calibrate" --gpu -o "$PROFILE"; then
    log "calibrated in $STEP_S s"
    grep -E "^# |best bf16|HBM|attention|kernels:|nccl|one rank|warning" "$OUT_DIR/calibrate.log" | head -40
    # The profile must be one the cost model can use: bf16 (dtype_bytes 2),
    # every GEMM point positive and below the datasheet peak, HBM between
    # 0.5 and 10 TB/s, mem_bound_eff and attn_eff in (0, 1], every
    # element-wise class's rate (cost-model bytes/s) in (0, 4 x hbm_bw].
    cal=$(python3 - "$PROFILE" "$OUT_DIR/calibrate.log" <<'PY'
import json, re, sys
h = json.load(open(sys.argv[1]))
pts = h.get("gemm_points", [])
peak = h.get("peak_flops", 0)
best = max((p["flops"] for p in pts), default=0)
f32 = re.search(r"fp32 storage ([0-9.e+]+) flop/s", open(sys.argv[2]).read())
bad = []
if h.get("dtype_bytes") != 2: bad.append("dtype_bytes %s" % h.get("dtype_bytes"))
if not pts or any(not (0 < p["flops"] <= peak) for p in pts): bad.append("GEMM points vs peak")
if not (0.5e12 <= h.get("hbm_bw", 0) <= 10e12): bad.append("hbm_bw %.3g" % h.get("hbm_bw", 0))
if not (0 < h.get("mem_bound_eff", 0) <= 1): bad.append("mem_bound_eff %s" % h.get("mem_bound_eff"))
if not (0 < h.get("attn_eff", 0) <= 1): bad.append("attn_eff %s" % h.get("attn_eff"))
cls = ["norm_bw", "residual_bw", "gelu_bw", "swiglu_bw", "rope_bw", "xent_bw", "adamw_bw", "embed_bw"]
bws = [h.get(c, 0) or 0 for c in cls]
# in cost-model bytes a class may beat the HBM rate (the cross-entropy is
# charged 16 bytes a logit; its bf16 kernels move about 8): allow 4x hbm_bw
lim = 4 * h.get("hbm_bw", 0)
bad += ["%s %.3g" % (c, b) for c, b in zip(cls, bws) if not (0 < b <= lim)]
print("FAIL" if bad else "ok", "bf16 GEMM %.0f TFLOP/s (%.0f%% of %.0f)%s, attention %.0f%% of peak, HBM %.2f TB/s, element-wise %.2f-%.2f TB/s, %d shapes%s" % (
    best / 1e12, 100 * best / peak if peak else 0, peak / 1e12,
    ", fp32-storage %.0f" % (float(f32.group(1)) / 1e12) if f32 else "",
    100 * h.get("attn_eff", 0), h.get("hbm_bw", 0) / 1e12, min(bws) / 1e12, max(bws) / 1e12,
    len(pts), "; bad: " + ", ".join(bad) if bad else ""))
PY
)
    [ -n "$cal" ] || cal="FAIL profile unreadable ($PROFILE)"
    row "calibrate (GPU)" "${cal%% *}" "${cal#* }"
    [ "${cal%% *}" = ok ] || FAILED=1
  else
    rc=$?; tail -5 "$OUT_DIR/calibrate.log"
    fail_row "calibrate (GPU)" "$(why $rc "$OUT_DIR/calibrate.log"); the plan uses the datasheet h200"
    PROFILE=h200
  fi
elif [ "$build_ok" = 1 ]; then
  # The GPU path must be compiled in: without a device it stops with "no
  # CUDA device" (a build without CUDA says it has no CUDA backend instead).
  "$BUILD/calibrate" --gpu --quick -o "$OUT_DIR/gpu-profile.json" >"$OUT_DIR/calibrate.log" 2>&1
  if grep -q "no CUDA device" "$OUT_DIR/calibrate.log"; then
    row "calibrate (GPU)" "$NOGPU" "--gpu path built (stops with 'no CUDA device' here)"
  else
    fail_row "calibrate (GPU)" "calibrate --gpu without a GPU did not stop on 'no CUDA device' (see $OUT_DIR/calibrate.log)"
  fi
  PROFILE=h200
fi
# Llama-3.2-1B shape: 16 layers, h 2048, 32 heads of 64, 8 kv heads, ffn 8192, V 128256.
cat >"$OUT_DIR/llama-1b.json" <<'JSON'
{
  "name": "llama-1b",
  "description": "1B-class Llama (Llama-3.2-1B shape) for the GPU MFU check",
  "block": "llama",
  "hidden": 2048,
  "n_layers": 16,
  "n_heads": 32,
  "n_kv_heads": 8,
  "ffn": 8192,
  "vocab": 128256,
  "seq_len": 4096,
  "tied_embeddings": true
}
JSON
# Measured vs predicted from an execute report.  MFU is against the plan's
# profile peak (the calibrated profile keeps the datasheet dense bf16 peak).
mfu_line() { # report.json
  python3 - "$1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); m, p = r["measured"], r["predicted"]
t_err = (p["step_time_s"] - m["step_time_s"]) / m["step_time_s"] if m["step_time_s"] else float("nan")
print("%s step %.3fs pred %.3fs (%+.0f%%); MFU %.1f%% pred %.1f%%; mem %.1f GB pred %.1f GB" % (
    "ok" if abs(t_err) <= 0.10 else "off", m["step_time_s"], p["step_time_s"], 100 * t_err,
    100 * m["mfu"], 100 * p["mfu"], m["peak_memory_bytes"] / 1e9, p["peak_memory_bytes"] / 1e9))
PY
}
BIG=$OUT_DIR/llama-1b.plan.json
if [ "$build_ok" = 1 ]; then
  if step "$OUT_DIR/big.plan.log" 15 75 "$BUILD/plan" --model "$OUT_DIR/llama-1b.json" --gpus 1 \
       --hw "$PROFILE" --tp 1 --pp 1 --dp 1 --mbs 1 --micro-batches 4 --seq 4096 \
       --recompute none -o "$BIG"; then
    if [ "$GPU_RUN" = 1 ]; then
      if step "$OUT_DIR/big.exec.log" 120 10 mpirun --oversubscribe -np 1 "$BUILD/execute" \
           --plan "$BIG" --backend cuda --dtype bf16 --steps 3 --warmup 1 \
           --report "$OUT_DIR/llama-1b.cuda.json"; then
        tail -8 "$OUT_DIR/big.exec.log"
        step "$OUT_DIR/big.compare.log" 15 0 "$BUILD/compare" "$OUT_DIR/llama-1b.cuda.json"
        cat "$OUT_DIR/big.compare.log"
        if MFU=$(mfu_line "$OUT_DIR/llama-1b.cuda.json" 2>"$OUT_DIR/big.mfu.err"); then
          # "off" (step time more than 10% from the prediction) is a finding, not a failure
          row "llama-1b bf16, calibrated" "${MFU%% *}" "${MFU#* }"
        else
          fail_row "llama-1b bf16, calibrated" "report unreadable (see $OUT_DIR/big.mfu.err)"
        fi
      else
        rc=$?; tail -5 "$OUT_DIR/big.exec.log"
        fail_row "llama-1b bf16, calibrated" "execute --backend cuda: $(why $rc "$OUT_DIR/big.exec.log")"
      fi
    else
      # The parser of the MFU row, run on a CPU report of step 3.
      if [ -f "$OUT_DIR/tiny-llama.bf16.cpu.json" ] && mfu_line "$OUT_DIR/tiny-llama.bf16.cpu.json" >"$OUT_DIR/big.mfu.log" 2>&1; then
        row "llama-1b bf16, calibrated" "$NOGPU" "plan ok ($(grep -o 'MFU [0-9.]* %' "$OUT_DIR/big.plan.log" | head -1) predicted on h200); report parser ok"
      else
        fail_row "llama-1b bf16, calibrated" "plan ok; the report parser failed on a CPU report (see $OUT_DIR/big.mfu.log)"
      fi
    fi
  else
    rc=$?; tail -5 "$OUT_DIR/big.plan.log"
    fail_row "llama-1b plan" "$(why $rc "$OUT_DIR/big.plan.log")"
  fi
fi

# ---- 5. attention benchmark (short) ---------------------------------------------------------
if [ "$build_ok" = 1 ] && [ "$GPU_RUN" = 1 ]; then
  if step "$OUT_DIR/attention_bench.log" 30 0 "$BUILD/bench/attention_bench" --quick; then
    cat "$OUT_DIR/attention_bench.log"
    row "attention fwd+bwd (bench)" info "$(grep -E '^ *8192' "$OUT_DIR/attention_bench.log" | head -1 | tr -s ' ' | cut -c1-80)"
  else
    rc=$?; row "attention fwd+bwd (bench)" info "$(why $rc "$OUT_DIR/attention_bench.log") (not counted)"
  fi
elif [ "$build_ok" = 1 ]; then
  row "attention fwd+bwd (bench)" "$NOGPU" "binary present"
fi

# ---- 6. the 1B run again with fp32 storage (last: it only adds a comparison) ---------------
# Same plan, `execute --dtype fp32`: the engine's other storage type, 2x the
# bytes of the prediction's bf16; its MFU beside the bf16 one shows what
# bf16 storage buys.  Left out (not failed) when the budget has run out.
if [ "$build_ok" = 1 ] && [ "$GPU_RUN" = 1 ] && [ -f "$OUT_DIR/llama-1b.cuda.json" ]; then
  step "$OUT_DIR/big.fp32.log" 90 0 mpirun --oversubscribe -np 1 "$BUILD/execute" \
    --plan "$BIG" --backend cuda --dtype fp32 --steps 3 --warmup 1 \
    --report "$OUT_DIR/llama-1b.fp32.cuda.json"
  rc=$?
  if [ "$rc" = 0 ] && MFU=$(mfu_line "$OUT_DIR/llama-1b.fp32.cuda.json" 2>>"$OUT_DIR/big.fp32.log"); then
    row "llama-1b fp32 (vs bf16 plan)" info "${MFU#* }"
  elif [ "$rc" = 125 ]; then
    row "llama-1b fp32 (vs bf16 plan)" skipped "time budget spent"
  else
    tail -5 "$OUT_DIR/big.fp32.log"
    fail_row "llama-1b fp32 (vs bf16 plan)" "execute --dtype fp32: $(why $rc "$OUT_DIR/big.fp32.log")"
  fi
elif [ "$build_ok" = 1 ] && [ "$GPU_RUN" = 0 ]; then
  row "llama-1b fp32 (vs bf16 plan)" "$NOGPU" "same plan, execute --dtype fp32"
fi

# ---- the table ------------------------------------------------------------------------------
{
  echo
  echo "# GPU run$( [ "$DRY" = 1 ] && echo " (dry run)" ): $NGPU x $GPU_NAME, $(date -u +%Y-%m-%dT%H:%MZ), $(($(date +%s) - T0)) s, output in ${OUT_DIR#"$ROOT"/}"
  printf '%-30s %-16s %s\n' "check" "result" "detail"
  for r in "${ROWS[@]}"; do echo "$r"; done
  echo "# $( [ "$FAILED" = 0 ] && echo "every step passed" || echo "FAILED: see the FAIL rows" )"
} | tee "$OUT_DIR/summary.txt"
exit $FAILED
