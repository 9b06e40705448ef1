#!/bin/sh
# Convert the checkpoint, optionally print its summary, then check the conversion.
python convert_checkpoint.py --in checkpoints/last.pt --out export/model.onnx
if [ -n "${VERBOSE:-}" ]; then
  python -c 'print("summary")'
else
  echo "conversion ran (set VERBOSE=1 for a summary)"
fi
if [ $? -ne 0 ]; then
  echo "conversion failed"
  exit 1
fi
echo "export ready"
