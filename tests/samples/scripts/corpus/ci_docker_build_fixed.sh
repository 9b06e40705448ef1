#!/bin/bash
# CI stage: build and push the training image; the build log is kept as an artifact.
set -euo pipefail
IMAGE=${IMAGE:-registry.local/ml/train}
TAG=${TAG:-dev}
mkdir -p artifacts

docker build -t "$IMAGE:$TAG" . 2>&1 | tee artifacts/docker-build.log
docker push "$IMAGE:$TAG"
echo "image $IMAGE:$TAG published"
