"""Starting workflows (floor): :mod:`payload` (the file a workflow needs besides the
workspace, CONTRACT §3), :mod:`backends` (``HARNESS_DISPATCH``: one class per backend behind
the ``Backend`` Protocol), :mod:`dispatcher` (write once, start once), :mod:`ci` (the
``gitlab-ci`` / ``github-actions`` pipelines and their follow-up), :mod:`settings` (the
``ci_dispatch:`` section, a leaf for ``config``) and :mod:`journal` (every run recorded from
start to end, so a killed one is resumed)."""
