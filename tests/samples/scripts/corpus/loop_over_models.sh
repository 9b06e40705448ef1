#!/bin/sh
# Export every model in the zoo; a failed export is reported and the loop moves on.
failures=0
for model in resnet50 vit-b16 bert-base; do
  python export.py --model "$model" --format onnx | tee -a export.log
  if [ $? -ne 0 ]; then
    echo "export of $model failed"
    failures=$((failures + 1))
  fi
done
echo "exports finished with $failures failure(s)"
exit "$failures"
