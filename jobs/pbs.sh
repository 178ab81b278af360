#!/bin/bash
# BenchFS under PBS Pro / OpenPBS: hosts from $PBS_NODEFILE (a host listed
# N times has N slots), results in ./results/<timestamp>-<label>/.
#   qsub jobs/pbs.sh
#   qsub -v BENCHFS_CONFIG=jobs/sweep-transfer-size.toml jobs/pbs.sh
#PBS -N benchfs
#PBS -l select=4:ncpus=16:mpiprocs=16
#PBS -l place=scatter:excl
#PBS -l walltime=01:00:00
#PBS -j oe

set -euo pipefail
cd "${PBS_O_WORKDIR:-.}"

config="${BENCHFS_CONFIG:-jobs/ior-easy.toml}"
# Extra `benchfs run` options, e.g. BENCHFS_ARGS="--set workload.transfer_size=1m".
read -r -a extra <<< "${BENCHFS_ARGS:-}"

exec benchfs run --nodes pbs --config "$config" "${extra[@]}"
