"""OpenCV's Haar cascade scan without the windows that lie wholly in a constant border.

:func:`detect` returns what ``CascadeClassifier.detectMultiScale`` returns (the same grouped
boxes, sorted) for less CPU when the image has constant margins, as the face detector's
padded copy has (its border is replicated; issue 43, point 4). It is exact by construction,
following OpenCV 4.x's scan (``modules/objdetect/src/cascadedetect.cpp``):

* the pyramid: scale ``factor`` = 1, f, f**2, ... (a double, used as a float) while the window
  ``round(win * factor)`` fits; level = the image resized to ``round(size / factor)`` with
  ``INTER_LINEAR_EXACT``; windows at rows ``0, step, 2 step, ...``, ``step`` 2 below factor
  2, else 1; a candidate at ``(x, y)`` is the box at ``round(x * factor), round(y * factor)``
  of side ``round(win * factor)``; the candidates are grouped by ``groupRectangles`` (eps 0.2);
* along a row the scan steps ``step`` after a window the cascade's first stage passed and
  ``2 step`` after one it rejected, from ``x = 0``;
* a window's verdict depends only on its pixels (integer sums from the level's integral
  image, whose wrap-around cancels in the differences).

So on a level below factor 2: every row of windows wholly in the constant top (bottom) rows
finds the candidates of the last (first) such row; in a row, the windows wholly in the
constant left columns share one verdict, and the scan reaches the first multiple of ``2 step``
among them whatever that verdict is, so it can start there (adding every window before it when
that one is a candidate); the windows wholly in the constant right columns share one verdict,
the scan reaches one of them within ``2 step`` of where they begin, and after a candidate it
visits every ``step``. OpenCV scans the rest of the level as its own first level (factor 1,
step 2) of the cropped copy. The levels from factor 2 on (step 1, thin borders: little to
save) go to OpenCV in one call. tests/instruments/test_haar_scan.py checks the candidates
against OpenCV's own scan.
"""

from __future__ import annotations

import numpy as np

__all__ = ["GROUP_EPS", "candidates", "detect", "levels"]

#: OpenCV's ``GROUP_EPS`` in ``detectMultiScale``
GROUP_EPS = 0.2


def _round(value: float) -> int:
    """OpenCV's ``cvRound``: to nearest, halves to even."""
    return round(float(value))


def levels(
    width: int, height: int, window: tuple[int, int], scale_factor: float, min_size: int
) -> list[float]:
    """The scale factors OpenCV scans a ``width`` x ``height`` image at (doubles, as its loop
    computes them; it scans each as a float)."""
    if not scale_factor > 1:
        raise ValueError(f"the Haar scan's scale_factor must be above 1; got {scale_factor}")
    out, factor = [], 1.0
    while True:
        w, h = _round(window[0] * factor), _round(window[1] * factor)
        if w > width or h > height:
            return out
        if w >= min_size and h >= min_size:
            out.append(factor)
        factor *= scale_factor


def _same_rows(a: np.ndarray) -> int:
    """How many leading rows of ``a`` equal its first (in growing chunks: borders are thin)."""
    start, chunk = 1, 16
    while start < len(a):
        stop = min(len(a), start + chunk)
        differ = np.flatnonzero((a[start:stop] != a[0]).any(axis=1))
        if len(differ):
            return start + int(differ[0])
        start, chunk = stop, chunk * 2
    return len(a)


def _level(cascade, level: np.ndarray, window: tuple[int, int]) -> set[tuple[int, int]]:
    """The candidates ``(x, y)`` of OpenCV's scan of one pyramid ``level`` below factor 2."""
    ww, wh = window
    step = 2
    lh, lw = level.shape
    nx, ny = lw - ww + 1, lh - wh + 1
    if nx <= 0 or ny <= 0:
        return set()
    last = (ny - 1) // step * step
    top_rows, bottom_rows = _same_rows(level), _same_rows(level[::-1])
    top = (top_rows - wh) // step * step if top_rows >= wh else 0  # last window row in them
    bottom = min(last, -(-(lh - bottom_rows) // step) * step)  # first window row in them
    bottom = max(bottom, top)  # top and bottom meet: every row the same
    band = level[top : bottom + wh]
    left_cols, right_cols = _same_rows(band.T), _same_rows(band.T[::-1])
    x0 = (left_cols - ww) // (2 * step) * (2 * step) if left_cols >= ww else 0
    right = lw - right_cols  # windows from here on lie in the constant right columns
    x1 = min(lw, max(right, x0) + 2 * step + ww)
    crop = np.ascontiguousarray(band[:, x0:x1])
    # OpenCV scans its first pyramid level (factor 1) at step 2, as this level is scanned
    found = cascade.detectMultiScale(crop, 2.0, 0, minSize=window, maxSize=window)
    rows: dict[int, set[int]] = {}
    for x, y, _, _ in found:
        rows.setdefault(top + int(y), set()).add(x0 + int(x))
    for xs in rows.values():
        if x0 in xs:  # the constant left windows are candidates: every one the scan visits
            xs.update(range(0, x0, step))
        in_right = [x for x in xs if x >= right]
        if in_right:  # from the first constant right window the scan reaches, every step
            xs.update(range(min(in_right), nx, step))
    for y in (*range(0, top, step), *range(bottom + step, ny, step)):
        xs = rows.get(top if y < top else bottom)
        if xs:
            rows[y] = xs
    return {(x, y) for y, xs in rows.items() for x in xs}


def candidates(
    cascade, gray: np.ndarray, scale_factor: float, min_size: int
) -> list[tuple[int, int, int, int]]:
    """The ungrouped candidate boxes of ``cascade.detectMultiScale(gray, scale_factor, 0,
    minSize=(min_size, min_size))``, sorted."""
    import cv2

    height, width = gray.shape
    window = tuple(int(v) for v in cascade.getOriginalWindowSize())
    out = []
    for scanned in levels(width, height, window, scale_factor, min_size):
        factor = np.float32(scanned)
        if factor >= 2:  # the rest in one call: smaller levels, thinner borders, step 1
            rest = tuple(_round(v * scanned) for v in window)
            found = cascade.detectMultiScale(gray, scale_factor, 0, minSize=rest)
            out.extend(tuple(int(v) for v in box) for box in found)
            break
        size = (_round(np.float32(width) / factor), _round(np.float32(height) / factor))
        level = cv2.resize(gray, size, interpolation=cv2.INTER_LINEAR_EXACT)
        box_w, box_h = (_round(np.float32(v) * factor) for v in window)
        for x, y in _level(cascade, level, window):
            out.append(
                (_round(np.float32(x) * factor), _round(np.float32(y) * factor), box_w, box_h)
            )
    return sorted(out)


def detect(
    cascade, gray: np.ndarray, scale_factor: float, min_neighbors: int, min_size: int
) -> list[tuple[int, int, int, int]]:
    """``cascade.detectMultiScale(gray, scale_factor, min_neighbors, minSize=(min_size,
    min_size))``'s boxes, sorted."""
    import cv2

    found = candidates(cascade, gray, scale_factor, min_size)
    if min_neighbors > 0 and found:
        found, _ = cv2.groupRectangles(found, min_neighbors, GROUP_EPS)
    return sorted(tuple(int(v) for v in box) for box in found)
