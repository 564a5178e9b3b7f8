"""TOML parsing on every Python rtcc supports: the standard library's ``tomllib`` from 3.11, the
``tomli`` package (the same parser, a declared dependency there) on 3.10."""

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

loads = tomllib.loads
TOMLDecodeError = tomllib.TOMLDecodeError

__all__ = ["loads", "TOMLDecodeError"]
