#!/bin/sh
# Quantize the model; report the quantizer's status when it fails.
python quantize.py --bits 4 --model export/model.onnx
if [ $? -ne 0 ]; then
  echo "quantization failed with status $?"
  exit 1
fi
echo "quantized"
