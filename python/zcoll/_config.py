"""Comm(config={...}): ZCOLL_* settings from code, through zcoll_config_create/set."""
from ctypes import byref, c_void_p

from ._errors import error
from ._lib import lib

__all__ = ["create"]


def _text(value):
    if isinstance(value, bool):  # True -> "1": the library's booleans are 0/1
        return "1" if value else "0"
    return str(value)


def create(settings):
    """A zcoll_config_t: the environment's values overridden by settings ({"ALGO":
    "ring"} or {"ZCOLL_ALGO": "ring"}). The caller frees it with zcoll_config_free."""
    cfg = c_void_p()
    st = lib.zcoll_config_create(byref(cfg))
    if st:
        raise error(st)
    try:
        for name, value in settings.items():
            st = lib.zcoll_config_set(cfg, str(name).encode(), _text(value).encode())
            if st:
                raise error(st)
    except BaseException:
        lib.zcoll_config_free(cfg)
        raise
    return cfg
