"""genfair: reproducible fairness audits of generative models.

The pipeline's stages (``stages/``) wire ``params.yaml`` to this library: backends and the
response cache in :mod:`genfair.models`, the pure fairness math in :mod:`genfair.metrics`,
one package per paper in :mod:`genfair.methodologies`, and MLflow logging in
:mod:`genfair.tracking`.
"""

__version__ = "0.1.0"
