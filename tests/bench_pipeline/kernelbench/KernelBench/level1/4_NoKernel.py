# Test problem written for kblaster's bench pipeline tests, in KernelBench's format (class Model, get_inputs, get_init_inputs).
# Has no 4_NoKernel.cu beside it and the bench runs without a model: "no initial kernel".
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(16, 16)]


def get_init_inputs():
    return []
