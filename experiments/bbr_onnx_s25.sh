#!/bin/sh
# Issue 53: `bench bounds --suite onnx` at 60 s per rung (session 25, H5). Two processes
# side by side (the two largest models apart, so that the run fits the session).
cd "$(dirname "$0")/.." || exit 1
nice -n 5 jaxplace bench bounds --suite onnx --models light_inception_v2,light_densenet121 \
    --ks 4,8,16 --time-limit 60 --upper-cache experiments/bbr_onnx_s25_upper.json.A \
    --markdown experiments/bbr_onnx_s25_A.md > experiments/bbr_onnx_s25_A.log 2>&1 &
nice -n 5 jaxplace bench bounds --suite onnx \
    --models cnn2,cnn8,light_bvlc_alexnet,light_inception_v1,light_resnet50,light_shufflenet,light_squeezenet,light_vgg19,light_zfnet512 \
    --ks 4,8,16 --time-limit 60 --upper-cache experiments/bbr_onnx_s25_upper.json.B \
    --markdown experiments/bbr_onnx_s25_B.md > experiments/bbr_onnx_s25_B.log 2>&1 &
wait
