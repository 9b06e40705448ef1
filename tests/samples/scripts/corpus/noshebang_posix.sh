# Sourced by the old job template or run with `sh`: GPU smoke test.
nvidia-smi --query-gpu=name,memory.total --format=csv
python -c 'import torch; torch.zeros(1).cuda()'
echo "smoke test ran"
if [ $? -ne 0 ]; then
  echo "GPU smoke test failed"
  exit 1
fi
echo "GPU smoke test passed"
