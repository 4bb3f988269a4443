"""Adds the `CONFIG_DIR` of every installed memorybench plugin (the `memorybench.plugins`
entry-point group) to Hydra's config search path, after memorybench's own `conf/`, so
that `memory=last_session` finds a plugin's `memory/last_session.yaml` with no flag,
for `memorybench qa`, `plan`, submitit jobs and Cloud Run tasks alike: every process
that composes a config runs this plugin.
"""

from __future__ import annotations

from hydra.core.config_search_path import ConfigSearchPath
from hydra.plugins.search_path_plugin import SearchPathPlugin


class MemorybenchPluginsSearchPath(SearchPathPlugin):
    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        from memorybench.plugins import installed_plugins

        for plugin in installed_plugins():
            folder = plugin.folder("CONFIG_DIR")
            if folder is not None and folder.is_dir():
                search_path.append(provider=f"memorybench-plugin:{plugin.name}", path=f"file://{folder}")
