"""The fixes a device report suggests: for each row :func:`~course_utils.mismatch.explain_devices` flags, what to
write, most important first (move the model, register a tensor, move an input and keep the result, create the
optimizer after moving...).

It reads only the report's rows, whose notes :mod:`course_utils.mismatch` writes with the words here
(:data:`CPU_ONLY`, :data:`MAYBE_LENGTHS`).
"""
from __future__ import annotations

from .devicereport import MISMATCH, WARNING, DeviceReport
from .text import shorten

__all__ = ["suggest", "CPU_ONLY", "MAYBE_LENGTHS"]

#: How a note starts for an input that belongs on the CPU whatever the model's device.
CPU_ONLY = "must stay on the CPU"
#: How a note starts for an integer tensor named like sequence lengths.
MAYBE_LENGTHS = "looks like sequence lengths"


def suggest(report: DeviceReport, model_tensors: int, movers: list[str], data_parallel: bool = False) -> list[str]:
    """Fixes for what ``report`` (:func:`course_utils.mismatch.explain_devices`'s) flags, most important first, each
    once; code is in `backticks`. ``model_tensors`` counts the model's parameters and buffers (all of them off target:
    move the model); ``movers`` are the inputs that move with a `.to` of their own (a Hugging Face ``BatchEncoding``);
    ``data_parallel``: the model is an ``nn.DataParallel`` on GPUs (its ``device_ids[0]`` is the target)."""
    where = f'"{report.target}"'
    out = (_model_fixes(report, model_tensors, where, data_parallel) + _container_fixes(report)
           + _input_fixes(report, movers, where) + _holder_fixes(report, where))
    if not (report.mismatches or report.warnings or report.problems) and report.entries:
        out.append("Nothing to fix here. Still failing? Look inside `forward` for tensors made by a factory "
                   "function without a device (`torch.zeros(n)`, `torch.tensor([...])`): create them with "
                   "`device=x.device` or a `*_like` function.")
    return list(dict.fromkeys(out))


def _model_fixes(report: DeviceReport, model_tensors: int, where: str, data_parallel: bool) -> list[str]:
    """Fixes for the model's parameters and buffers that are not on the target (``where``, quoted)."""
    out: list[str] = []
    model_bad = [e for e in report.entries if e.kind in ("parameter", "buffer") and e.status == MISMATCH]
    if not model_bad:
        return out
    if any(e.device == "meta" for e in model_bad) and report.target != "meta":
        out.append("Tensors on meta hold no data, so `.to` cannot move them: build the real tensors with "
                   f"`model.to_empty(device={where})`, then load the weights with `model.load_state_dict(...)`.")
    if data_parallel:
        out.append(f"nn.DataParallel checks that every parameter and buffer is on device_ids[0] "
                   f"({report.target}) before each call: move the model there, `model.to({where})`. Moving the "
                   "inputs does not help: it scatters them to its GPUs from wherever they are.")
    elif len(model_bad) == model_tensors:
        out.append(f"Move the model: `model.to({where})` (in place: every parameter and buffer moves).")
    else:
        shown = shorten(", ".join(e.name for e in model_bad), 60)
        out.append(f"Part of the model is elsewhere ({shown}): a layer added or a tensor replaced after "
                   f"moving? Call `model.to({where})` again after changing the model.")
    return out


def _container_fixes(report: DeviceReport) -> list[str]:
    """Fixes for what `Module.to` does not see: plain tensor attributes, and layers or tensors in plain lists and
    dicts (one fix per container)."""
    out: list[str] = []
    for e in report.entries:
        if e.kind == "plain attribute":
            owner, _, attr = e.name.rpartition(".")
            in_owner = f" (in submodule '{owner}')" if owner else ""
            if "[" in attr:
                out.append(f"'{e.name}'{in_owner} is a tensor inside a plain list or dict: `Module.to` does not "
                           "look inside. Register each tensor with `self.register_buffer(name, tensor)`, or use "
                           "`nn.ParameterList` / `nn.ParameterDict` if they should be trained.")
            else:
                out.append(f"'{e.name}'{in_owner} is a plain tensor attribute: `Module.to` does not move it. "
                           f"In `__init__`, write `self.register_buffer(\"{attr}\", tensor)` instead "
                           "(add `persistent=False` to keep it out of the state_dict).")
        elif e.kind == "unregistered module" and not e.device:   # the module's row; its tensors' rows follow
            container, _, _ = e.name.partition("[")
            wrapper = "nn.ModuleDict" if "['" in e.name else "nn.ModuleList"
            if any(s.startswith(f"'{container}[") for s in out):
                continue                                          # one fix per plain container
            where_now = sorted({x.device for x in report.entries if x.kind == "unregistered module" and x.device
                                and x.name.startswith(container + "[")})
            left = f" (its layers are on {', '.join(where_now)})" if where_now else ""
            out.append(f"'{container}[...]' holds layers in a plain list or dict: `Module.to` never sees their "
                       f"parameters{left}, and `model.parameters()` (so the optimizer) misses them. In `__init__`, "
                       f"write `self.{container.rpartition('.')[2]} = {wrapper}(...)` around the same layers, then "
                       "move the model again and create the optimizer after.")
    return out


def _input_fixes(report: DeviceReport, movers: list, where: str) -> list[str]:
    """Fixes for the inputs: a whole batch with its own `.to` in one call, CPU-only arguments and lengths to the
    CPU, every other input to the target."""
    out: list[str] = []
    moved_whole = []
    for mover in movers:    # a batch with its own `.to` (a BatchEncoding) moves in one call
        inside = [e for e in report.entries if e.kind == "input" and e.status == MISMATCH and _inside(e.name, mover)]
        if inside:
            moved_whole += inside
            out.append(f"Move the whole batch '{mover}' in one call: `{mover} = {mover}.to({where})` (its `.to` moves "
                       "every tensor it holds, as a Hugging Face `BatchEncoding` does).")
    for e in report.entries:
        if e.kind == "input" and e.status == MISMATCH and e.note.startswith(CPU_ONLY):
            fix = (f"`{e.name} = {e.name}.cpu()`" if e.dtype != "Generator" else
                   "`torch.Generator(device=\"cpu\")` for the DataLoader (and no default device while it runs)")
            out.append(f"'{e.name}' must be on the CPU, whatever device the model uses: {fix}.")
        elif e.kind == "input" and e.status == MISMATCH and e.note.startswith(MAYBE_LENGTHS):
            out.append(f"'{e.name}' {MAYBE_LENGTHS}: `{e.name} = {e.name}.cpu()` if it goes to "
                       f"pack_padded_sequence, `{e.name} = {e.name}.to({where})` if the model computes with it.")
        elif e.kind == "input" and e.status == MISMATCH and e not in moved_whole:
            out.append(f"Move input '{e.name}': `{e.name} = {e.name}.to({where})` "
                       "(`Tensor.to` returns the moved tensor and leaves the original where it was: keep the result).")
    return out


def _holder_fixes(report: DeviceReport, where: str) -> list[str]:
    """Fixes for tensors held beside the model: by a loss (or another module passed), by the optimizer."""
    out: list[str] = []
    for owner in dict.fromkeys(e.name.split(".")[0] for e in report.entries
                               if e.kind in ("loss", "module") and e.status == MISMATCH):
        out.append(f"Move '{owner}' with the model: `{owner}.to({where})` (a loss's `weight` / `pos_weight` are "
                   "buffers, so `Module.to` moves them).")
    if any(e.kind == "optimizer state" and e.status in (MISMATCH, WARNING) for e in report.entries):
        out.append("Optimizer state lives where the parameters were when it was created: move the model "
                   "first, then create the optimizer (or call `optimizer.load_state_dict(...)` after moving: "
                   "it casts the state to each parameter's device).")
    return out


def _inside(name: str, container: str) -> bool:
    """Whether the input ``name`` was found inside the container called ``container`` (``"inputs"``: the top level)."""
    return container == "inputs" or name.startswith(container + "[")
