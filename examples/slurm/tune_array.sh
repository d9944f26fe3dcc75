#!/bin/bash
# Tune a model's shape list over N nodes with a Slurm job array, then merge the shards into one
# run (a job that depends on the array). From a login node:
#
#   SHAPES=shapes/llama3_8b.txt FAMILY=gemm BACKEND=cuda RUN=llama3_8b \
#   OUT=/shared/tuning_runs N=8 examples/slurm/tune_array.sh
#
# submits `sbatch --array=0-7` of this script (each task tunes shard I/N of every (shape x config)
# on its node: `ktune tune ... --shard $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT`), then the
# merge, `--dependency=afterany` on the array: `ktune merge` refuses a shard that did not finish,
# naming it (resubmit that task: it resumes), so a failed node never yields a silently partial run.
# Then, on any machine that sees OUT:  ktune diff $OUT/$RUN  and  ktune apply $OUT/$RUN
#
# SHAPES: one --shape per line ("M=1,16,64,256 N=4096 K=4096"; # comments and blank lines skipped).
# OUT must be on a file system every node sees. KTUNE: the ktune binary (default: ktune on PATH).
# TUNE_ARGS: further `ktune tune` options, the same for every shard (--strategy, --method, ...).
# GRES: the generic resources of a shard's job (default gpu:1; empty for none); the merge needs none.
#SBATCH --job-name=ktune-shard
#SBATCH --nodes=1
#SBATCH --ntasks=1
#SBATCH --time=04:00:00
set -euo pipefail

KTUNE=${KTUNE:-ktune}
: "${SHAPES:?SHAPES=file of shapes, one per line}" "${FAMILY:?FAMILY=kernel family}" "${RUN:?RUN=run name}"
BACKEND=${BACKEND:-cuda}
OUT=${OUT:-tuning_runs}
N=${N:-${SLURM_ARRAY_TASK_COUNT:-4}}

shard_name() { echo "${RUN}_shard${1}of${N}"; }

case "${1:-}" in
merge)  # the dependent job: every shard's run folder, combined into $OUT/$RUN
  shards=()
  for ((i = 0; i < N; i++)); do shards+=("$OUT/$(shard_name "$i")"); done
  exec "$KTUNE" merge "${shards[@]}" --run-name "$RUN" --output-dir "$OUT"
  ;;
esac

if [[ -z "${SLURM_ARRAY_TASK_ID:-}" ]]; then  # on the login node: submit the array and the merge
  gres=${GRES-gpu:1}  # what a shard's node needs; GRES= for none (the CPU backend)
  array=$(sbatch --parsable --array="0-$((N - 1))" ${gres:+--gres="$gres"} --export=ALL,N="$N" "$0")
  sbatch --parsable --dependency="afterany:${array%%;*}" --job-name=ktune-merge --export=ALL,N="$N" "$0" merge
  exit
fi

# One array task: shard I of N. A task that is requeued (node failure, preemption) resumes its run.
N=${SLURM_ARRAY_TASK_COUNT:-$N}
name=$(shard_name "$SLURM_ARRAY_TASK_ID")
args=(tune "$FAMILY" --backend "$BACKEND" --shard "$SLURM_ARRAY_TASK_ID/$N" --run-name "$name" --output-dir "$OUT")
while IFS= read -r line; do
  [[ -z "${line// /}" || "$line" == \#* ]] || args+=(--shape "$line")
done <"$SHAPES"
[[ -f "$OUT/$name/run_metadata.json" ]] && args+=(--resume)
# shellcheck disable=SC2086  # TUNE_ARGS is a list of options
exec "$KTUNE" "${args[@]}" ${TUNE_ARGS:-}
