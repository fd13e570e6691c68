"""A toy methodology written against the contract, outside ``src/``: a two-option quiz.

Each probe asks which of two numbers is larger; the model's accuracy, with a Wilson interval,
is the score. The simulated LLM answers correctly with the planted accuracy of the quiz's own
config (``simulated``: 0.8), which keys its cached answers alone.
``BareQuiz`` (``toy_quiz_bare``) is its pipeline alone, with the default presentation and
comparison roles. ``tests/e2e/test_one_package_one_config.py`` installs this folder as a
package of its own declaring both (``docs/architecture.md``, "Adding a methodology").

The layout of every methodology package: ``__init__.py`` re-exports, ``config.py`` the
pydantic config, ``methodology.py`` the classes (the pipeline), ``report.py`` its presentation
role, ``compare.py`` its comparison role (imports inside the package are relative, so it also works
installed under another name).
"""

from .config import QuizConfig
from .methodology import BareQuiz, Quiz

__all__ = ["BareQuiz", "Quiz", "QuizConfig"]
