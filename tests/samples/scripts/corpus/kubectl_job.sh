#!/bin/sh
# Submit the training job to the cluster and wait for it; print the pod log on failure.
kubectl apply -f k8s/train-job.yaml
kubectl wait --for=condition=complete --timeout=6h job/train
rc=$?
if [ "$rc" -ne 0 ]; then
  kubectl logs job/train --tail=200
  echo "training job did not complete ($rc)"
  exit "$rc"
fi
echo "training job complete"
