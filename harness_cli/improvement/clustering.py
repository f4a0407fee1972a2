"""The deterministic clustering behind gap-patterns: TF-IDF over the report text, then
agglomerative clustering (average linkage, cosine distance) cut at a distance threshold.

Up to ``exact_max`` texts the linkage is exact over every pairwise distance (memory grows with
the square: 2,000 texts is 32 MB). Beyond that — the 10,000-report benchmark — the texts are
first reduced (LSA: truncated SVD of the TF-IDF matrix) and grouped into micro-clusters by
k-means, and the same linkage runs over the micro-cluster centres; each text takes its
micro-cluster's label. Every random step is seeded, so the same input gives the same labels.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

SEED = 0
TOKEN_PATTERN = r"(?u)\b[A-Za-z][A-Za-z0-9_]+\b"
"""Words of two or more characters that start with a letter (numbers carry no theme)."""


@dataclass
class Clustering:
    labels: list[int]
    """Cluster of each text, numbered in order of first appearance (0, 1, 2 …)."""
    matrix: Any
    """The TF-IDF matrix (scipy sparse, rows L2-normalised), or None when it was empty."""
    terms: list[str]
    method: str


def cluster_texts(
    texts: list[str],
    *,
    distance_threshold: float,
    exact_max: int = 2000,
    micro_clusters: int = 400,
    svd_components: int = 100,
    max_features: int = 20000,
) -> Clustering:
    n = len(texts)
    if n < 2:
        return Clustering(list(range(n)), None, [], "trivial")
    from sklearn.feature_extraction.text import TfidfVectorizer

    vectorizer = TfidfVectorizer(
        sublinear_tf=True,
        stop_words="english",
        token_pattern=TOKEN_PATTERN,
        max_features=max_features,
        min_df=1 if n <= exact_max else 2,
        dtype=np.float32 if n > exact_max else np.float64,
    )
    try:
        matrix = vectorizer.fit_transform(texts)
    except ValueError:  # no usable word at all: every report stands alone
        return Clustering(list(range(n)), None, [], "no vocabulary")
    terms = [str(t) for t in vectorizer.get_feature_names_out()]
    if n <= exact_max:
        raw = _exact(matrix, distance_threshold)
        method = (
            "tf-idf + average-linkage agglomerative "
            f"(cosine, exact, threshold {distance_threshold:g})"
        )
    else:
        raw = _two_stage(matrix, distance_threshold, micro_clusters, svd_components)
        method = (
            f"tf-idf + LSA({svd_components}) + k-means({micro_clusters} micro-clusters) + "
            f"average-linkage agglomerative (cosine, threshold {distance_threshold:g})"
        )
    return Clustering(_canonical(raw), matrix, terms, method)


def _exact(matrix: Any, threshold: float) -> list[int]:
    from sklearn.cluster import AgglomerativeClustering
    from sklearn.metrics.pairwise import cosine_distances

    distances = cosine_distances(matrix)
    model = AgglomerativeClustering(
        n_clusters=None, metric="precomputed", linkage="average", distance_threshold=threshold
    )
    return [int(x) for x in model.fit(distances).labels_]


def _two_stage(matrix: Any, threshold: float, micro: int, components: int) -> list[int]:
    from sklearn.cluster import AgglomerativeClustering, KMeans
    from sklearn.decomposition import TruncatedSVD
    from sklearn.preprocessing import normalize

    k = max(2, min(components, matrix.shape[1] - 1))
    # float64: scikit-learn's float32 distance path upcasts in chunks and is several times slower
    svd = TruncatedSVD(n_components=k, random_state=SEED)
    reduced = normalize(svd.fit_transform(matrix).astype(np.float64))
    n_micro = max(2, min(micro, matrix.shape[0] // 2))
    # Random (seeded) initialisation: k-means++ costs more than the whole fit here, and the
    # micro-clusters only need to be tight, not optimal; the linkage does the real grouping.
    kmeans = KMeans(n_clusters=n_micro, init="random", n_init=1, max_iter=50, random_state=SEED)
    with warnings.catch_warnings():  # a duplicate-heavy corpus may leave fewer distinct points
        warnings.simplefilter("ignore")
        micro_labels = kmeans.fit_predict(reduced)
    used = np.unique(micro_labels)
    centres = normalize(kmeans.cluster_centers_[used])
    if len(used) < 2:
        return [0] * matrix.shape[0]
    model = AgglomerativeClustering(
        n_clusters=None, metric="cosine", linkage="average", distance_threshold=threshold
    )
    macro = model.fit(centres).labels_
    lookup = {int(m): int(c) for m, c in zip(used, macro, strict=True)}
    return [lookup[int(m)] for m in micro_labels]


def _canonical(labels: list[int]) -> list[int]:
    """Renumber so cluster 0 holds the first text, 1 the first text not in 0, and so on: labels
    then depend only on the grouping, never on the algorithm's internal numbering."""
    seen: dict[int, int] = {}
    return [seen.setdefault(label, len(seen)) for label in labels]


def top_terms(matrix: Any, rows: list[int], terms: list[str], count: int = 3) -> list[str]:
    """The heaviest terms of the rows' mean TF-IDF vector; ties broken alphabetically."""
    if matrix is None or not terms:
        return []
    centre = np.asarray(matrix[rows].mean(axis=0)).ravel()
    candidates = np.argsort(-centre, kind="stable")[: count * 4]
    ranked = sorted(
        ((float(-centre[i]), terms[i]) for i in candidates if centre[i] > 0),
    )
    return [term for _, term in ranked[:count]]


def by_centrality(matrix: Any, rows: list[int]) -> list[int]:
    """``rows`` ordered from nearest to farthest from their mean (cosine), then by position."""
    if matrix is None or len(rows) < 2:
        return list(rows)
    block = matrix[rows]
    centre = np.asarray(block.mean(axis=0)).ravel()
    norm = float(np.linalg.norm(centre)) or 1.0
    sims = np.asarray(block @ (centre / norm)).ravel()
    order = sorted(range(len(rows)), key=lambda i: (-round(float(sims[i]), 9), rows[i]))
    return [rows[i] for i in order]
