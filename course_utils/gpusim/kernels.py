"""CUDA-only kernels that ``nn.LSTM`` and ``nn.GRU`` call on a GPU (PyTorch's fused cells, from ``RNN.cu``), written
with PyTorch's operations so that the simulated GPU (:mod:`.backend`) runs them on its CPU tensors; their workspaces
keep CUDA's layout, for the backward kernels that read them."""
from __future__ import annotations

from typing import Any

import torch


def _lstm_cell(input_gates: torch.Tensor, hidden_gates: torch.Tensor, cx: torch.Tensor, input_bias: Any = None,
               hidden_bias: Any = None) -> tuple:
    """CUDA's fused LSTM cell (``RNN.cu``): gates i, f, g, o, kept activated in the workspace for the backward."""
    i, f, g, o = (input_gates + hidden_gates + (0 if input_bias is None else input_bias + hidden_bias)).chunk(4, 1)
    i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
    cy = f * cx + i * g
    return o * cy.tanh(), cy, torch.cat([i, f, g, o], 1)


def _lstm_cell_backward(grad_hy: Any, grad_cy: Any, cx: torch.Tensor, cy: torch.Tensor, workspace: torch.Tensor,
                        has_bias: bool) -> tuple:
    """Its backward: the gradients of the gates, of ``cx`` and of the biases."""
    (i, f, g, o), t = workspace.chunk(4, 1), cy.tanh()
    gh, gc = (torch.zeros_like(cy) if grad is None else grad for grad in (grad_hy, grad_cy))
    gcx = gh * o * (1 - t * t) + gc
    gates = torch.cat([gcx * g * (1 - i) * i, gcx * cx * (1 - f) * f, gcx * i * (1 - g * g), gh * t * (1 - o) * o], 1)
    return gates, gcx * f, gates.sum(0) if has_bias else None


def _gru_cell(input_gates: torch.Tensor, hidden_gates: torch.Tensor, hx: torch.Tensor, input_bias: Any = None,
              hidden_bias: Any = None) -> tuple:
    """CUDA's fused GRU cell: gates r, z, n; r, z, n, ``hx`` and the hidden n gate kept for the backward."""
    if input_bias is not None:
        input_gates, hidden_gates = input_gates + input_bias, hidden_gates + hidden_bias
    (ir, iz, i_n), (hr, hz, hn) = input_gates.chunk(3, 1), hidden_gates.chunk(3, 1)
    r, z = (ir + hr).sigmoid(), (iz + hz).sigmoid()
    n = (i_n + r * hn).tanh()
    return n + z * (hx - n), torch.cat([r, z, n, hx, hn], 1)


def _gru_cell_backward(grad_hy: torch.Tensor, workspace: torch.Tensor, has_bias: bool) -> tuple:
    """Its backward: the gradients of the input and hidden gates, of ``hx`` and of both biases."""
    r, z, n, hx, hn = workspace.chunk(5, 1)
    gn = grad_hy * (1 - z) * (1 - n * n)
    gr, gz = gn * hn * (1 - r) * r, grad_hy * (hx - n) * (1 - z) * z
    gi, gh = torch.cat([gr, gz, gn], 1), torch.cat([gr, gz, gn * r], 1)
    return gi, gh, grad_hy * z, *((gi.sum(0), gh.sum(0)) if has_bias else (None, None))


#: The kernels, by ATen name.
KERNELS = {"_thnn_fused_lstm_cell": _lstm_cell, "_thnn_fused_lstm_cell_backward_impl": _lstm_cell_backward,
           "_thnn_fused_gru_cell": _gru_cell, "_thnn_fused_gru_cell_backward": _gru_cell_backward}


__all__ = ["KERNELS"]
