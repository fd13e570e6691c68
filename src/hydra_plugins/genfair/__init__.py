"""genfair's OmegaConf resolver, registered when Hydra scans its plugins.

DVC (``dvc exp run``) and ``genfair compose`` both compose ``conf/`` with Hydra, which first
imports every module of the ``hydra_plugins`` namespace: registering here makes
``${genfair_runs:${models},${methodologies}}`` (and ``genfair_code``, ``genfair_study_steps``,
``genfair_plots``,
``genfair_inputs``, ``genfair_digests``, ``genfair_sizes``) in
``conf/config.yaml`` resolve in either.
Only the registration and the guards (:mod:`genfair.yaml_guard`, light) happen at import; the
rest of genfair is imported when a resolver runs.

:class:`CheckedConfigFiles`, a search-path plugin, is what Hydra calls before it loads any
config: it checks every YAML file of the config folder (:mod:`genfair.yaml_guard`: no alias,
no absurd nesting), so a "billion laughs" file in ``conf/`` fails in one line naming it instead
of expanding in Hydra, in ``genfair compose`` and in ``dvc exp run`` alike. At import it also
bounds the strings OmegaConf's interpolations build and refuses ``${oc.env:...}``
(:func:`genfair.yaml_guard.bound_interpolated_strings`, ``refuse_environment_resolvers``):
what no single file shows (an override, an interpolation across files).
"""

from typing import Any

from hydra.core.config_search_path import ConfigSearchPath
from hydra.plugins.search_path_plugin import SearchPathPlugin
from omegaconf import OmegaConf


def _runs(models: Any, methodologies: Any, only: Any = None) -> Any:
    from genfair.study.runs import compose_runs

    # a node, not a dict: OmegaConf.resolve (which DVC calls) only writes nodes back
    return OmegaConf.create(compose_runs(models, methodologies, only))


def _code(methodologies: Any) -> Any:
    from genfair.study.runs import compose_code

    return OmegaConf.create(compose_code(methodologies))


def _study_steps(models: Any, methodologies: Any, only: Any = None) -> Any:
    from genfair.study.runs import compose_study_steps

    return OmegaConf.create(compose_study_steps(models, methodologies, only))


def _plots(methodologies: Any) -> Any:
    from genfair.study.runs import compose_plots

    return OmegaConf.create(compose_plots(methodologies))


def _digests(models: Any, methodologies: Any, instruments: Any) -> Any:
    from genfair.study.runs import compose_digests

    return OmegaConf.create(compose_digests(models, methodologies, instruments))


def _sizes(methodologies: Any, scale: Any) -> Any:
    from genfair.study.runs import compose_sizes

    return OmegaConf.create(compose_sizes(methodologies, scale))


def _inputs(curation: Any) -> Any:
    from genfair.curation.inputs import external_inputs

    plain = (
        OmegaConf.to_container(curation, resolve=True)
        if OmegaConf.is_config(curation)
        else curation
    )
    return OmegaConf.create(external_inputs(plain))


OmegaConf.register_new_resolver("genfair_runs", _runs, replace=True)
OmegaConf.register_new_resolver("genfair_code", _code, replace=True)
OmegaConf.register_new_resolver("genfair_study_steps", _study_steps, replace=True)
OmegaConf.register_new_resolver("genfair_plots", _plots, replace=True)
OmegaConf.register_new_resolver("genfair_inputs", _inputs, replace=True)
OmegaConf.register_new_resolver("genfair_digests", _digests, replace=True)
OmegaConf.register_new_resolver("genfair_sizes", _sizes, replace=True)


def _guard() -> None:
    from genfair.yaml_guard import bound_interpolated_strings, refuse_environment_resolvers

    bound_interpolated_strings()
    refuse_environment_resolvers()


_guard()


class CheckedConfigFiles(SearchPathPlugin):
    """Checks the YAML files of every config folder on the search path (the study's ``conf/``)
    before Hydra reads one; adds no folder."""

    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        from pathlib import Path

        from genfair.yaml_guard import check_yaml_folder

        for element in search_path.get_path():
            scheme, sep, path = element.path.partition("://")
            folder = Path(path if sep else scheme)
            if (not sep or scheme == "file") and folder.is_dir():
                check_yaml_folder(folder, shown=folder.name)
