"""Parallax from Python: plan the parallel layout of a transformer's
training over G GPUs (docs/python.md).

    import parallax
    result = parallax.plan(model="70b", gpus=1024)       # plan --json, as a dict
    best = result["plans"][0]

Every call runs the C library's planner through its C API (libparallax):
the results are those of the command-line tools, and bad input raises
parallax.Error with the tool's message.
"""
from . import _capi
from ._capi import Error

Error.__module__ = "parallax"  # shown as parallax.Error in tracebacks

__all__ = ["Error", "Model", "plan", "explain", "validate", "export", "load_hw",
           "calibrate_from_runs", "plan_options", "__version__"]
__version__ = _capi.version()


class Model:
    """A model the planner knows: a preset name ("70b", "llama3-8b"), a path
    to a preset or a Hugging Face config.json, or a dict of either form.
    .spec is the model in the preset schema (docs/model-schema.md), .params
    and .params_active its parameter counts."""

    def __init__(self, source, name=None):
        if isinstance(source, Model):
            source = source.spec
        if not isinstance(source, (str, dict)):
            raise TypeError("Model(source): a preset name, a path or a dict, not %s"
                            % type(source).__name__)
        doc = _capi.call("model_load", {"model": source, "name": name})
        self.spec = doc["model"]
        self.params = doc["params"]
        self.params_active = doc["params_active"]

    @classmethod
    def from_hf(cls, config, name=None):
        """From a Hugging Face config: a config.json path or its dict."""
        if isinstance(config, dict) and "model_type" not in config:
            raise Error("model_type: a Hugging Face config names its model_type")
        return cls(config, name=name)

    @property
    def name(self):
        return self.spec["name"]

    def to_dict(self):
        return dict(self.spec)

    def __repr__(self):
        return "parallax.Model(%r: %d layers, hidden %d, %.4g B parameters)" % (
            self.name, self.spec["n_layers"], self.spec["hidden"], self.params / 1e9)


_PLAN_OPTIONS = None


def plan_options():
    """The keyword arguments plan() and explain() take besides model and gpus
    (the `plan` options, dashes as underscores)."""
    global _PLAN_OPTIONS
    if _PLAN_OPTIONS is None:
        _PLAN_OPTIONS = tuple(n.replace("-", "_") for n in _capi.plan_options())
    return _PLAN_OPTIONS


def _plan_request(fn_name, model, gpus, options):
    allowed = plan_options()
    for key in options:
        if key not in allowed:
            raise TypeError("%s() got an unexpected keyword argument %r (the options are: %s)"
                            % (fn_name, key, ", ".join(allowed)))
    if isinstance(model, Model):
        model = model.spec
    request = {"model": model, "gpus": gpus}
    request.update(options)
    return request


def plan(model=None, gpus=None, **options):
    """`plan --json` as Python objects: model (a preset name, a path, a dict
    or a Model), gpus, and any `plan` option as a keyword with dashes as
    underscores (global_batch=2048, partition="uniform", tp=8, top=5, ...).
    A value None leaves the option out; True/False give a switch or on/off;
    a list gives a repeatable option once per element (sweep=["gpus=8..64",
    "seq=4096,8192"]: the sweep's document, docs/plan-cli.md)."""
    return _capi.call("plan", _plan_request("plan", model, gpus, options))


def explain(model=None, gpus=None, **options):
    """The text of `plan --explain` (the table, the memory and time
    breakdown of the chosen plan, its stages and the rule of thumb)."""
    return _capi.call("explain", _plan_request("explain", model, gpus, options))["text"]


def validate(file=None, hw_dir=None, check=False):
    """`validate --json` as Python objects: the published runs of file
    (default: the shared data file beside the source tree) predicted and
    compared.  check=True raises Error when the fidelity bounds fail."""
    return _capi.call("validate", {"file": file, "hw_dir": hw_dir, "check": check})


_EXPORT_OPTIONS = ("plan_path", "execute_path")


def export(plan, to, **options):
    """The plan (a plan-file dict, e.g. plan(...)["plan"], or a path)
    exported for a framework: to = "megatron", "nemo", "torchtitan",
    "deepspeed" or "slurm".  Options: plan_path and execute_path (what the
    slurm script runs).  Returns the file's text."""
    for key in options:
        if key not in _EXPORT_OPTIONS:
            raise TypeError("export() got an unexpected keyword argument %r (the options are: "
                            "%s)" % (key, ", ".join(_EXPORT_OPTIONS)))
    request = {"plan": plan, "to": to}
    request.update(options)
    return _capi.call("export", request)["text"]


def load_hw(hw):
    """A hardware profile (a name, a path or a dict) as the planner reads it
    (docs/hw-schema.md)."""
    return _capi.call("hw_load", {"hw": hw})


def calibrate_from_runs(rows, hw, framework, max_factors=None):
    """`calibrate --from-runs`: measured runs (a list of rows of the
    published-runs schema) fitted into a hardware and a framework profile,
    starting from hw and framework (profile names or paths).  Returns
    {"hw": dict, "framework": dict, "fit": dict}: the fitted profiles as
    their files hold them (save them as JSON for plan(hw=..., framework=...))
    and the fit table (docs/calibration.md)."""
    return _capi.call("calibrate_from_runs", {"runs": rows, "hw": hw, "framework": framework,
                                              "max_factors": max_factors})
