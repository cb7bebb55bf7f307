"""course_utils.gpusim.machines: the machines a check makes an answer see, and what they leave behind."""
from __future__ import annotations

import functools

import torch

from course_utils.checking import check
from course_utils.gpusim import simulated_accelerator, simulated_no_accelerator


def _pick_device():
    if torch.accelerator.is_available():
        return torch.accelerator.current_accelerator()
    return torch.device("cpu")


def test_a_cached_answer_is_asked_afresh_on_each_simulated_machine():
    """Caching a device choice is honest (a machine does not change while a program runs): full marks."""
    for cached in (functools.lru_cache(maxsize=None)(_pick_device), functools.cache(_pick_device)):
        result = check("02.pick_device", cached)
        assert result.passed and result.points == result.max_points, result.text()


def test_what_an_answer_cached_on_a_simulated_machine_is_forgotten_after_it():
    cached = functools.cache(_pick_device)
    real = cached()
    with simulated_no_accelerator(answer=cached):
        assert cached() == torch.device("cpu")
    with simulated_accelerator("meta", answer=cached):
        assert cached().type == "meta"
    assert cached() == real and cached.cache_info().currsize == 1
