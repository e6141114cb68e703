"""The app's settings file: `config.toml` in the user's config folder.

    model = "google/diffusion-gemma"      # last model: a folder or a hub id
    theme = "diffusion-dark"
    canvas_mode = "candidates"            # or "noise"
    think = false                         # thinking on for new conversations
    record_trajectories = true            # keep every answer's denoising, for replaying it (ctrl+r)
    trajectory_cap_mb = 16                # the most recordings one conversation keeps, in MiB (oldest go)
    continue_last = false                 # start in the most recent conversation instead of an empty chat

    [samplers.llada2_moe]                 # engine.Settings fields, per model family
    block_length = 32
    temp = 0.0

A file that cannot be read or checked is never changed: `load_config` reports why in one line and
returns the defaults, and `save_config` refuses to replace it unless forced. Writes go to a temporary
file that then replaces the old one, so a crash leaves either the old file or the new one.

Sampler tables are checked against `engine.settings`' schema, which imports no MLX.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import sys
import tempfile
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, get_args

import platformdirs
import tomli_w

from engine.errors import SettingsError
from engine.models.families import FAMILIES
from engine.settings import SPECS, Settings, coerce
from themes import DEFAULT_THEME

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10
    import tomli as tomllib

CONFIG_DIR_ENV = "DIFFUSION_CHAT_CONFIG_DIR"
CONFIG_FILENAME = "config.toml"
# What the live canvas shows at undecided positions (widgets.canvas): one definition, the type and the tuple the
# settings file is checked against.
CanvasMode = Literal["candidates", "noise"]
CANVAS_MODES: tuple[CanvasMode, ...] = get_args(CanvasMode)

# tomli_w cannot keep comments, so say once that the app rewrites the file.
_HEADER = (
    "# diffusion-chat settings, rewritten by the app (comments are not kept).\n"
    "# If a value here is invalid the app runs on defaults and leaves this file alone until it is fixed.\n\n"
)


class ConfigError(Exception):
    """The settings cannot be used or saved; the message is one line."""


@dataclass(frozen=True)
class AppConfig:
    model: str | None = None
    theme: str = DEFAULT_THEME  # any registered Textual theme name; the app falls back if it is unknown
    canvas_mode: str = "candidates"
    think: bool = False
    record_trajectories: bool = True
    trajectory_cap_mb: float = 16
    continue_last: bool = False   # at start, open the most recently changed conversation
    # Per model family ("diffusion_gemma", "llada2_moe"): engine.Settings field -> value, only those
    # that differ from the defaults. Thinking is not among them: the top-level `think` holds it.
    samplers: dict[str, dict[str, Any]] = field(default_factory=dict)

    def sampler_for(self, family: str) -> Settings:
        """The saved settings a new generation for `family` starts from."""
        return Settings.from_dict(self.samplers.get(family, {}))

    def with_sampler(self, family: str, settings: Settings) -> AppConfig:
        """A copy that remembers the values `settings` sets for `family` (unset ones are simply not stored)."""
        _check_family(family)
        overrides = settings.validated().to_dict()
        samplers = copy.deepcopy(self.samplers)
        if overrides:
            samplers[family] = overrides
        else:
            samplers.pop(family, None)
        return dataclasses.replace(self, samplers=samplers)

    @property
    def trajectory_cap_bytes(self) -> int:
        return int(self.trajectory_cap_mb * 2**20)


@dataclass(frozen=True)
class LoadResult:
    config: AppConfig
    error: str | None  # one line naming the file when it could not be used; the file is left as it was
    path: Path


def default_config_path() -> Path:
    """`$DIFFUSION_CHAT_CONFIG_DIR/config.toml` if set, else config.toml in the platform's user config folder."""
    folder = os.environ.get(CONFIG_DIR_ENV) or platformdirs.user_config_dir("diffusion-chat")
    return Path(folder) / CONFIG_FILENAME


def load_config(path: str | os.PathLike[str] | None = None) -> LoadResult:
    """Read the settings file. A missing file gives the defaults; a broken one gives the defaults and an error."""
    path = Path(path) if path is not None else default_config_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return LoadResult(AppConfig(), None, path)
    except (OSError, UnicodeDecodeError) as error:
        return LoadResult(AppConfig(), _one_line(f"cannot read {path}: {error}"), path)
    try:
        config = _config_from_data(tomllib.loads(text))
    except tomllib.TOMLDecodeError as error:
        return LoadResult(AppConfig(), _one_line(f"{path}: invalid TOML: {error}"), path)
    except ConfigError as error:
        return LoadResult(AppConfig(), _one_line(f"{path}: {error}"), path)
    return LoadResult(config, None, path)


def save_config(config: AppConfig, path: str | os.PathLike[str] | None = None, *, force: bool = False) -> Path:
    """Write `config` atomically and return the path. Refuses (ConfigError) to replace a file that does
    not load cleanly, so hand edits with a mistake are not lost, unless `force` is true."""
    path = Path(path) if path is not None else default_config_path()
    # Check what is about to be written exactly as a later load would (this also writes 1 as 1.0 for
    # float settings, so the file shows their type).
    try:
        data = _config_to_data(_config_from_data(_config_to_data(config)))
    except ConfigError as error:
        raise ConfigError(_one_line(f"not saving settings: {error}")) from None
    if not force and path.exists():
        existing = load_config(path)
        if existing.error is not None:
            raise ConfigError(f"not overwriting a settings file that did not load ({existing.error}); fix or move it first")
    text = _HEADER + tomli_w.dumps(data)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8") as file:
                file.write(text)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except OSError as error:
        raise ConfigError(_one_line(f"cannot write {path}: {error}")) from None
    return path


# -- checking -----------------------------------------------------------------------------------------


def _config_to_data(config: AppConfig) -> dict[str, Any]:
    data: dict[str, Any] = {}
    if config.model is not None:
        data["model"] = config.model
    data["theme"] = config.theme
    data["canvas_mode"] = config.canvas_mode
    data["think"] = config.think
    data["record_trajectories"] = config.record_trajectories
    data["trajectory_cap_mb"] = config.trajectory_cap_mb
    data["continue_last"] = config.continue_last
    samplers = {family: dict(values) for family, values in config.samplers.items() if values}
    if samplers:
        data["samplers"] = samplers
    return data


def _config_from_data(data: dict[str, Any]) -> AppConfig:
    known = {item.name for item in fields(AppConfig)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(f"unknown key(s): {', '.join(unknown)}")
    values: dict[str, Any] = {}
    for name in ("model", "theme"):
        if name in data:
            if not isinstance(data[name], str) or not data[name].strip():
                raise ConfigError(f"{name} must be a non-empty string, got {data[name]!r}")
            values[name] = data[name]
    if "canvas_mode" in data:
        if data["canvas_mode"] not in CANVAS_MODES:
            raise ConfigError(f"canvas_mode must be one of {', '.join(CANVAS_MODES)}; got {data['canvas_mode']!r}")
        values["canvas_mode"] = data["canvas_mode"]
    for name in ("think", "record_trajectories", "continue_last"):
        if name in data:
            if not isinstance(data[name], bool):
                raise ConfigError(f"{name} must be true or false, got {data[name]!r}")
            values[name] = data[name]
    if "trajectory_cap_mb" in data:
        cap = data["trajectory_cap_mb"]
        if isinstance(cap, bool) or not isinstance(cap, (int, float)) or not 0 <= cap < 2**40:
            raise ConfigError(f"trajectory_cap_mb must be a number of MiB, 0 or more, got {cap!r}")
        values["trajectory_cap_mb"] = cap
    if "samplers" in data:
        samplers = data["samplers"]
        if not isinstance(samplers, dict):
            raise ConfigError("samplers must be a table of [samplers.<family>] tables")
        values["samplers"] = {family: _checked_sampler(family, table) for family, table in samplers.items()}
    return AppConfig(**values)


def _checked_sampler(family: str, table: Any) -> dict[str, Any]:
    """Check one [samplers.<family>] table against the settings schema (types as TOML gave them)."""
    _check_family(family)
    where = f"[samplers.{family}]"
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table")
    if "think" in table:
        raise ConfigError(f"{where} cannot set think; use the top-level think key")
    try:
        for name in table:
            if name not in SPECS:
                raise SettingsError(f"has unknown setting {name!r}")
        checked = {name: coerce(name, value) for name, value in table.items()}
        Settings.from_dict(checked)
    except SettingsError as error:
        raise ConfigError(f"{where} {error}") from None
    return checked


def _check_family(family: str) -> None:
    if family not in FAMILIES:
        raise ConfigError(f"unknown model family {family!r}; known: {', '.join(sorted(FAMILIES))}")


def _one_line(text: str) -> str:
    return " ".join(text.split())
