#!/bin/sh
# Issue 53, after experiments/bbr_onnx_s25.sh (same models, same cached upper bounds):
# the rungs apart, since the exact MIP starts from the bound before it (z >= LB) and
# BB&R from the bottleneck MIP's: C = the MIP rungs without BB&R, D = BB&R alone from
# the simple bound. Two processes side by side for each.
cd "$(dirname "$0")/.." || exit 1
A=light_inception_v2,light_densenet121
B=cnn2,cnn8,light_bvlc_alexnet,light_inception_v1,light_resnet50,light_shufflenet,light_squeezenet,light_vgg19,light_zfnet512
for run in C D; do
    if [ $run = C ]; then m=simple,bottleneck,exact; else m=simple,bbr; fi
    for part in A B; do
        eval models=\$$part
        nice -n 5 jaxplace bench bounds --suite onnx --models "$models" --ks 4,8,16 \
            --time-limit 60 --methods $m --upper-cache experiments/bbr_onnx_s25_upper.json.$part \
            --markdown experiments/bbr_onnx_s25_$run$part.md > experiments/bbr_onnx_s25_$run$part.log 2>&1 &
    done
    wait
done
