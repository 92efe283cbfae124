"""shim_transformer_engine.py — a stand-in for Transformer Engine, which is
GPU-only and not installed here.  Megatron-Bridge imports it at module level
(peft/lora_layers.py: `import transformer_engine.pytorch as te`) on the way
to its config classes.  install() makes every `transformer_engine...` import
succeed with modules whose attributes are inert placeholder classes and
whose __version__ is VERSION; nothing of TE runs, and a checker that calls
into TE code would fail on a placeholder, not pass.  Used only by the
export_real checkers (docs/export.md, "The real-framework suite")."""
import importlib.abc
import importlib.machinery
import sys
import types

VERSION = "2.12.0"  # the newest Megatron-Bridge 0.3.1 takes (<2.13)


class _Meta(type):
    """Attribute chains (te.pytorch.ops.Sequential) give placeholders too."""

    def __getattr__(cls, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        sub = _Meta(attr, (_Placeholder,), {"__module__": cls.__module__})
        setattr(cls, attr, sub)
        return sub


class _Placeholder(metaclass=_Meta):
    """An inert TE symbol: a class that can be subclassed or referenced."""

    def __init_subclass__(cls, **kw):
        pass

    def __init__(self, *a, **k):
        raise RuntimeError("shim_transformer_engine: TE is not installed (%s)"
                           % type(self).__name__)


def _module(name):
    m = types.ModuleType(name)
    m.__path__ = []
    m.__version__ = VERSION

    def getattr_(attr, _name=name):
        if attr.startswith("__"):
            raise AttributeError(attr)
        cls = _Meta(attr, (_Placeholder,), {"__module__": _name})
        setattr(m, attr, cls)
        return cls
    m.__getattr__ = getattr_
    return m


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path, target=None):
        if fullname == "transformer_engine" or fullname.startswith("transformer_engine."):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        return _module(spec.name)

    def exec_module(self, module):
        pass


def install():
    try:
        import transformer_engine  # noqa: F401  the real one, where it is installed
        return
    except ImportError:
        sys.meta_path.insert(0, _Finder())
