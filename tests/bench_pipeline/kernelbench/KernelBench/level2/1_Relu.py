# Test problem written for kblaster's bench pipeline tests, in KernelBench's format (class Model, get_inputs, get_init_inputs).
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x) * 0.5


def get_inputs():
    return [torch.randn(64, 64)]


def get_init_inputs():
    return []
