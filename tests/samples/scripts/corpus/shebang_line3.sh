# Copyright the ML platform team.
# Evaluation wrapper used by the release pipeline.
#!/bin/bash
set -eo pipefail

python evaluate.py --suite full 2>&1 | tee eval.log
echo "evaluation done"
