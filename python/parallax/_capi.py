"""ctypes bindings of libparallax's C API (parallax.h): JSON in, JSON out.

Nothing is computed here: every call hands a JSON request to the C library
and reads its JSON answer back.
"""
import ctypes
import ctypes.util
import json
import os

_HERE = os.path.dirname(os.path.abspath(__file__))
API_VERSION = 1  # PARALLAX_API_VERSION this module was written for


class Error(Exception):
    """A request the planner refused.  str(error) is the message the
    command-line tool prints (it names the option or field and the allowed
    values); .status is the kind ("usage error", "not found", ...) and
    .code the C API's status code."""

    def __init__(self, message, status=None, code=None):
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code


def _find_library():
    """The library inside the package (pip install), else PARALLAX_LIBRARY,
    else the system's (meson install)."""
    here = os.path.join(_HERE, "libparallax.so")
    if os.path.exists(here):
        return here
    env = os.environ.get("PARALLAX_LIBRARY")
    if env:
        return env
    found = ctypes.util.find_library("parallax")
    if found:
        return found
    raise ImportError("libparallax not found: install the package with `pip install .` "
                      "from the Parallax source tree, or set PARALLAX_LIBRARY")


def _use_packaged_presets():
    """The package carries the presets (data/models, data/hw_profiles,
    data/frameworks); the
    library reads them from there unless the environment names others."""
    for var, sub in (("PARALLAX_MODELS_DIR", "models"), ("PARALLAX_HW_DIR", "hw_profiles"),
                     ("PARALLAX_FRAMEWORK_DIR", "frameworks")):
        path = os.path.join(_HERE, "data", sub)
        if os.path.isdir(path):
            os.environ.setdefault(var, path)


_use_packaged_presets()
_lib = ctypes.CDLL(_find_library())
_REQUEST_CALLS = ("parallax_plan", "parallax_explain", "parallax_validate", "parallax_export",
                  "parallax_model_load", "parallax_hw_load", "parallax_calibrate_from_runs")
for _name in _REQUEST_CALLS:
    _fn = getattr(_lib, _name)
    _fn.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
    _fn.restype = ctypes.c_int
_lib.parallax_plan_options.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
_lib.parallax_plan_options.restype = ctypes.c_int
_lib.parallax_free.argtypes = [ctypes.c_void_p]
_lib.parallax_free.restype = None
_lib.parallax_version.argtypes = []
_lib.parallax_version.restype = ctypes.c_char_p
_lib.parallax_api_version.argtypes = []
_lib.parallax_api_version.restype = ctypes.c_int

if _lib.parallax_api_version() != API_VERSION:
    raise ImportError("libparallax has API version %d; this package needs %d"
                      % (_lib.parallax_api_version(), API_VERSION))


def _answer(rc, out):
    """The JSON answer behind out (freed), or Error when rc is not 0."""
    if not out.value:
        raise Error("libparallax returned no answer (out of memory?)", "internal error", rc)
    try:
        text = ctypes.string_at(out.value).decode("utf-8")
    finally:
        _lib.parallax_free(out.value)
    doc = json.loads(text)
    if rc != 0:
        raise Error(doc.get("error", text), doc.get("status"), rc)
    return doc


def call(name, request):
    """Calls parallax_<name> with the request (a dict) and returns its
    answer as Python objects."""
    out = ctypes.c_void_p()
    rc = getattr(_lib, "parallax_" + name)(json.dumps(request).encode("utf-8"),
                                           ctypes.byref(out))
    return _answer(rc, out)


def plan_options():
    """The option names of `plan` (with dashes) that a request may carry."""
    out = ctypes.c_void_p()
    return _answer(_lib.parallax_plan_options(ctypes.byref(out)), out)


def version():
    return _lib.parallax_version().decode("ascii")
