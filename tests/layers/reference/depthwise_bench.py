"""PyTorch's depthwise convolution (nn.functional.conv2d with groups == channels) at the shapes of
tests/layers/depthwise_bench.cpp: forward + backward (input and weight gradients), the minimum
over repetitions in milliseconds, on 2 threads. Usage: depthwise_bench.py [REPEATS]."""
import sys
import time

import torch
import torch.nn.functional as F

SHAPES = [(512, 28, 3, 1), (512, 28, 5, 1), (512, 28, 3, 2), (1024, 14, 3, 1), (1024, 14, 5, 1),
          (2048, 7, 3, 1), (2048, 7, 5, 1)]


def fastest_ms(x, weight, stride, padding, repeats):
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        y = F.conv2d(x, weight, None, stride, padding, 1, x.shape[1])
        y.backward(y.detach())
        best = min(best, (time.perf_counter() - start) * 1e3)
    return best


def main():
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    torch.set_num_threads(2)
    print(f"{'shape (N=8)':<22} {'torch ms':>10}")
    for channels, size, kernel, stride in SHAPES:
        x = torch.rand(8, channels, size, size, requires_grad=True)
        weight = torch.rand(channels, 1, kernel, kernel, requires_grad=True)
        ms = fastest_ms(x, weight, stride, kernel // 2, repeats)
        print(f"{f'{channels}x{size}^2 k{kernel} s{stride}':<22} {ms:>10.2f}")


if __name__ == "__main__":
    main()
