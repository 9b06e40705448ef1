#!/bin/sh
# Slurm step wrapper: one task per GPU, the step's status becomes the job's.
set -e
: "${SLURM_JOB_ID:=local}"
LOG="slurm-$SLURM_JOB_ID.out"

echo "job $SLURM_JOB_ID starting" > "$LOG"
srun --ntasks-per-node=8 --gpus-per-task=1 python train.py --epochs 3 >> "$LOG" 2>&1
echo "job $SLURM_JOB_ID step finished" >> "$LOG"
cat "$LOG"
