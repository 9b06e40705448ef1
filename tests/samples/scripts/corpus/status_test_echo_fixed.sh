#!/bin/sh
# Quantize the model; report the quantizer's status when it fails.
python quantize.py --bits 4 --model export/model.onnx
rc=$?
if [ "$rc" -ne 0 ]; then
  echo "quantization failed with status $rc"
  exit "$rc"
fi
echo "quantized"
