"""
Config overrides, nanoGPT's configurator with its sharp edges fixed. train.py and bench.py run it in their own globals:

    exec(open('configurator.py').read())
    python train.py config/demo.py --max_iters=200 --out_dir=out/lr=3e-4

Arguments are applied left to right. A config file is run as Python (plain assignments; names starting with '_' are
its private helpers). `--key=value` is split at the first '=' only, the value parsed with ast.literal_eval and kept as
the raw string when that fails (or when the default is a string). A value must have its default's type, except that
an int is accepted (and converted) where the default is a float; bool values are True/False (or true/false). A key
without a default is an error that names it and suggests close matches. Only scalar globals (bool, int, float, str,
None) are config keys.
"""
import ast as _ast
import builtins as _builtins
import difflib as _difflib
import os as _os
import sys as _sys


def _help(g):
    """The script's docstring and its config block (every key with its default and comment), as the source says."""
    source = open(g['__file__']).read()
    print((_ast.get_docstring(_ast.parse(source)) or '').strip() + '\n')
    lines = source.split('\n')
    start = next((i for i, line in enumerate(lines) if line.startswith('# config')), None)
    if start is not None:
        end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith('# ---'))
        print('\n'.join(lines[start:end]))
    print('\nset keys with --key=value or a config file (python script.py config/x.py --key=value)')


def _configure(argv, g):
    """Apply config files and --key=value arguments in argv to the dict of globals g (--help: print the keys)."""
    if '--help' in argv or '-h' in argv:
        _help(g)
        raise SystemExit(0)
    from_flags = set()  # keys set by --key=value so far (a config file after them overrides them: warned)
    known = {k for k, v in g.items() if not k.startswith('_') and isinstance(v, (bool, int, float, str, type(None)))}

    def check(key, value, where):
        if key not in known:
            close = _difflib.get_close_matches(key, sorted(known), n=3)
            hint = f"; did you mean {' or '.join(close)}?" if close else ''
            raise SystemExit(f"unknown config key {key!r} ({where}){hint}")
        default = g[key]
        if default is None or type(value) is type(default):
            return value
        if isinstance(default, float) and type(value) is int:  # --learning_rate=1 means 1.0
            return float(value)
        raise SystemExit(f"config key {key!r} ({where}) expects {type(default).__name__} "
                         f"(default {default!r}), got {type(value).__name__} {value!r}")

    for arg in argv:
        if not arg.startswith('--'):  # a config file: run it, then check every scalar it set
            ns = dict(g)
            try:
                with open(arg) as f:
                    code = _builtins.compile(f.read(), arg, 'exec')  # train.py's `compile` is a config key
            except FileNotFoundError:
                raise SystemExit(f"config file {arg!r} not found (looked in {_os.getcwd()}); "
                                 f"the presets are config/*.py, e.g. config/demo.py") from None
            except SyntaxError as err:
                raise SystemExit(f"{arg}:{err.lineno}: {err.msg} (config files are plain Python assignments)") from None
            exec(code, ns)
            for key, value in ns.items():
                if key.startswith('_') or not isinstance(value, (bool, int, float, str, type(None))):
                    continue
                if key not in g or value is not g[key]:
                    if key in from_flags and value != g[key]:
                        print(f"warning: {arg} sets {key}={value!r} over the earlier --{key}={g[key]!r} (arguments "
                              f"apply left to right: put --{key}= after the file)", file=_sys.stderr)
                    g[key] = check(key, value, arg)
            continue
        key, eq, raw = arg[2:].partition('=')
        if not eq:
            raise SystemExit(f"expected --key=value, got {arg!r}")
        if isinstance(g.get(key), bool) and raw in ('true', 'false'):
            raw = raw.capitalize()
        try:
            value = _ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            value = raw
        if isinstance(g.get(key), str) and not isinstance(value, str):  # --out_dir=2024 stays a string
            value = raw
        g[key] = check(key, value, arg)
        from_flags.add(key)


_configure(_sys.argv[1:], globals())
