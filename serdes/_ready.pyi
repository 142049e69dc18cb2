from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

def ready(value: T, /) -> Coroutine[Any, Any, T]: ...
